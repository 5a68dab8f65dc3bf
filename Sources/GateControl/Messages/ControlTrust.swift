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

    /// The service's user name in the deploy files (`gate.service`, sysusers).
    public static let serviceUser = "gate"
}
