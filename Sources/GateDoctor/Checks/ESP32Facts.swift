import GateCore

/// What `gate doctor` saw of the ESP32 itself: its answer to ICMP echo requests and
/// what the kernel's neighbour table says about its address. Nothing is ever sent
/// to its UDP port (that would be a trigger).
public struct ESP32Facts: Sendable, Hashable {
    /// The answer to the echo requests, sent through an unprivileged ping socket.
    public enum Echo: Sendable, Hashable {
        /// The first reply came this long after its request.
        case replied(Duration)
        /// No reply within the budget.
        case noReply(waited: Duration)
        /// The kernel reported the address unreachable (nobody answered its ARP or
        /// neighbour solicitations, or no route): `words` are the errno's.
        case unreachable(String)
        /// Ping sockets are closed to this process's groups (`EACCES`):
        /// `range` is net.ipv4.ping_group_range as read (nil when unreadable).
        case notPermitted(range: String?, gid: UInt32)
        /// The echo could not be tried (`socket`, `connect` or `send` failed otherwise).
        case failed(String)
    }

    public var address: IPAddress
    /// The interface of the ESP32's network (the on-link verdict's).
    public var interface: String
    public var echo: Echo
    /// The neighbour table's entry for `address`, read after the echo; nil when there is none.
    public var neighbour: Result<NeighbourEntry?, NeighbourTableError>

    public init(
        address: IPAddress,
        interface: String,
        echo: Echo,
        neighbour: Result<NeighbourEntry?, NeighbourTableError>
    ) {
        self.address = address
        self.interface = interface
        self.echo = echo
        self.neighbour = neighbour
    }
}
