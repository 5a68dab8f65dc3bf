#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GateCore

/// An IP address and UDP port, convertible to and from `sockaddr_in`/`sockaddr_in6`.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    public var ip: IPAddress
    public var port: UInt16

    public init(ip: IPAddress, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// Reads a `sockaddr` of family AF_INET or AF_INET6; `nil` for any other.
    public init?(storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let raw = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            var address = raw.sin_addr
            guard let ip = IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }) else { return nil }
            self.init(ip: ip, port: UInt16(bigEndian: raw.sin_port))
        case AF_INET6:
            let raw = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            var address = raw.sin6_addr
            guard let ip = IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) }) else { return nil }
            self.init(ip: ip, port: UInt16(bigEndian: raw.sin6_port))
        default:
            return nil
        }
    }

    public var family: Int32 { ip.family == .v4 ? AF_INET : AF_INET6 }

    /// Calls `body` with this address as a `sockaddr` pointer and its length.
    public func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch ip.family {
        case .v4:
            var raw = sockaddr_in()
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &raw.sin_addr) { $0.copyBytes(from: ip.bytes) }
            return withUnsafePointer(to: &raw) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6:
            var raw = sockaddr_in6()
            raw.sin6_family = sa_family_t(AF_INET6)
            raw.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &raw.sin6_addr) { $0.copyBytes(from: ip.bytes) }
            return withUnsafePointer(to: &raw) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// `192.168.1.50:8080`, `[::1]:8080`
    public var description: String {
        ip.family == .v4 ? "\(ip):\(port)" : "[\(ip)]:\(port)"
    }
}
