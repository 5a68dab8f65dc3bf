/// Whether a datagram to an address stays on a directly connected network.
public enum LinkVerdict: Sendable, Hashable {
    case loopback
    case onLink(interface: String)
    /// No up interface has a subnet holding the address.
    case offLink

    /// Decides from an interface table, so that it can be tested with invented tables.
    public static func of(_ target: IPAddress, in table: [InterfaceAddress]) -> LinkVerdict {
        if target.isLoopback { return .loopback }
        for entry in table where entry.isUp && entry.address.family == target.family {
            if entry.address.sharesSubnet(with: target, mask: entry.netmask) {
                return entry.isLoopback ? .loopback : .onLink(interface: entry.name)
            }
        }
        return .offLink
    }
}
