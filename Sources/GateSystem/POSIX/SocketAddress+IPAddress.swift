import GateCore
import Plumbing

extension SocketAddress {
    /// The ESP32's or the broker's address as the configuration names it.
    public init(ip: IPAddress, port: UInt16) {
        // IPAddress holds 4 or 16 bytes by construction: the only lengths this refuses.
        self.init(addressBytes: ip.bytes, port: port)!
    }

    public var ip: IPAddress {
        // Both types hold exactly 4 or 16 bytes.
        IPAddress(bytes: addressBytes)!
    }
}
