/// One network interface as `getifaddrs` reports it.
public struct InterfaceAddress: Sendable, Hashable {
    public var name: String
    public var isUp: Bool
    public var isLoopback: Bool
    public var address: IPAddress
    public var netmask: IPAddress

    public init(name: String, isUp: Bool, isLoopback: Bool, address: IPAddress, netmask: IPAddress) {
        self.name = name
        self.isUp = isUp
        self.isLoopback = isLoopback
        self.address = address
        self.netmask = netmask
    }
}
