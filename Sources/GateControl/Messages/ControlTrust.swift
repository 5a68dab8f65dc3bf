import GateCore

/// Whose process `gate open` hands its openings to on `control.sock`
/// (docs/CONTRACT.md#the-control-socket): any member of group `gate` can put a
/// socket of their own in the shared runtime folder, so the kernel's credentials
/// of the listener decide, never what it says.
public struct ControlTrust: Sendable, Hashable {
    /// This account.
    public var ownUID: UInt32
    /// The runtime folder's owner (the deploy files make `/run/gate` root's).
    public var folderOwnerUID: UInt32?
    /// The system user `gate` that `gate.service` runs as, when it exists.
    public var serviceUID: UInt32?

    public init(ownUID: UInt32, folderOwnerUID: UInt32?, serviceUID: UInt32?) {
        self.ownUID = ownUID
        self.folderOwnerUID = folderOwnerUID
        self.serviceUID = serviceUID
    }

    /// Root, this account, the runtime folder's owner, or the service's user.
    public func trusts(_ peerUID: UInt32) -> Bool {
        peerUID == 0 || peerUID == ownUID || peerUID == folderOwnerUID || peerUID == serviceUID
    }

    /// The same, with the service's user looked up (through NSS: a module loaded, the
    /// userdb folders walked) only for a peer that is none of the others.
    public static func trusts(_ peer: UInt32, ownUID: UInt32, folderOwnerUID: UInt32?, service: () -> UInt32?) -> Bool {
        var trust = ControlTrust(ownUID: ownUID, folderOwnerUID: folderOwnerUID, serviceUID: nil)
        if !trust.trusts(peer) { trust.serviceUID = service() }
        return trust.trusts(peer)
    }

    /// The service's user name in the deploy files (`gate.service`, sysusers).
    public static let serviceUser = "gate"
}
