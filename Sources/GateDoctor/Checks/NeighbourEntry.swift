import GateCore

/// One entry of the kernel's neighbour table (ARP for IPv4, neighbour discovery for
/// IPv6), as `RTM_NEWNEIGH` reports it.
public struct NeighbourEntry: Sendable, Hashable {
    /// The `NUD_*` bits of linux/neighbour.h.
    public struct State: OptionSet, Sendable, Hashable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        public static let incomplete = State(rawValue: 0x01)
        public static let reachable = State(rawValue: 0x02)
        public static let stale = State(rawValue: 0x04)
        public static let delay = State(rawValue: 0x08)
        public static let probe = State(rawValue: 0x10)
        public static let failed = State(rawValue: 0x20)
        public static let noARP = State(rawValue: 0x40)
        public static let permanent = State(rawValue: 0x80)
    }

    public var address: IPAddress
    public var interfaceIndex: Int32
    public var state: State
    /// The link-layer (MAC) address the host answered with; nil while nobody has.
    public var linkAddress: [UInt8]?

    public init(address: IPAddress, interfaceIndex: Int32, state: State, linkAddress: [UInt8]?) {
        self.address = address
        self.interfaceIndex = interfaceIndex
        self.state = state
        self.linkAddress = linkAddress
    }

    /// The host answered ARP (or a neighbour solicitation) recently: a state that
    /// only a resolved entry has, with the address it answered with.
    public var answered: Bool {
        guard let linkAddress, !linkAddress.isEmpty, linkAddress.contains(where: { $0 != 0 }) else { return false }
        return !state.isDisjoint(with: [.reachable, .stale, .delay, .probe, .permanent])
    }

    /// Asked, and nobody answered (yet): the kernel is resolving it or gave up.
    public var unanswered: Bool {
        !answered && !state.isDisjoint(with: [.incomplete, .failed])
    }

    /// The state as `ip neigh` prints it (`REACHABLE`, `STALE`, `FAILED`).
    public var stateName: String {
        let names: [(State, String)] = [
            (.incomplete, "INCOMPLETE"), (.reachable, "REACHABLE"), (.stale, "STALE"), (.delay, "DELAY"),
            (.probe, "PROBE"), (.failed, "FAILED"), (.noARP, "NOARP"), (.permanent, "PERMANENT"),
        ]
        let set = names.filter { state.contains($0.0) }.map(\.1)
        return set.isEmpty ? "NONE" : set.joined(separator: ",")
    }

    /// `2e:6d:87:25:64:d0`.
    public var linkAddressText: String? {
        linkAddress.map { $0.map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16) }.joined(separator: ":") }
    }
}
