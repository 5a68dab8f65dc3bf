#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An IPv4 or IPv6 address and a port, convertible to and from the kernel's
/// `sockaddr_in`/`sockaddr_in6`: what a socket is bound to, connected to, or
/// received from.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address in network order: 4 bytes (IPv4) or 16 (IPv6).
    public let addressBytes: [UInt8]
    public let port: UInt16

    /// nil unless `addressBytes` holds 4 or 16 bytes.
    public init?(addressBytes: [UInt8], port: UInt16) {
        guard addressBytes.count == 4 || addressBytes.count == 16 else { return nil }
        self.addressBytes = addressBytes
        self.port = port
    }

    /// Reads what `recvfrom`/`getsockname`/`getaddrinfo` filled in; nil for a family
    /// other than AF_INET and AF_INET6.
    public init?(storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let raw = withUnsafeBytes(of: &storage) { $0.loadUnaligned(as: sockaddr_in.self) }
            var address = raw.sin_addr
            self.init(addressBytes: withUnsafeBytes(of: &address) { Array($0) }, port: UInt16(bigEndian: raw.sin_port))
        case AF_INET6:
            let raw = withUnsafeBytes(of: &storage) { $0.loadUnaligned(as: sockaddr_in6.self) }
            var address = raw.sin6_addr
            self.init(addressBytes: withUnsafeBytes(of: &address) { Array($0) }, port: UInt16(bigEndian: raw.sin6_port))
        default:
            return nil
        }
    }

    /// An IPv4 or IPv6 literal without brackets (`inet_pton`'s forms) and a port.
    public init?(literal: String, port: UInt16) {
        let family = literal.contains(":") ? AF_INET6 : AF_INET
        var bytes = [UInt8](repeating: 0, count: family == AF_INET6 ? 16 : 4)
        guard inet_pton(family, literal, &bytes) == 1 else { return nil }
        self.init(addressBytes: bytes, port: port)
    }

    public var family: Int32 { addressBytes.count == 4 ? AF_INET : AF_INET6 }

    /// Calls `body` with this address as a `sockaddr` pointer and its length. `scopeID`
    /// is the interface index an IPv6 link-local address needs (`if_nametoindex`); 0 for none.
    public func withSockaddr<R>(
        scopeID: UInt32 = 0,
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R
    ) rethrows -> R {
        if addressBytes.count == 4 {
            var raw = sockaddr_in()
            raw.sin_family = sa_family_t(AF_INET)
            raw.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &raw.sin_addr) { $0.copyBytes(from: addressBytes) }
            return try withUnsafePointer(to: &raw) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        var raw = sockaddr_in6()
        raw.sin6_family = sa_family_t(AF_INET6)
        raw.sin6_port = port.bigEndian
        raw.sin6_scope_id = scopeID
        withUnsafeMutableBytes(of: &raw.sin6_addr) { $0.copyBytes(from: addressBytes) }
        return try withUnsafePointer(to: &raw) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }

    /// The address without the port, as `inet_ntop` writes it. A v4-mapped IPv6
    /// address (a v4 peer of a `[::]` socket) is shown as plain IPv4, which is what
    /// the peer itself would call it.
    public var host: String {
        if addressBytes.count == 16, addressBytes[0..<10].allSatisfy({ $0 == 0 }), addressBytes[10] == 0xff,
            addressBytes[11] == 0xff
        {
            return addressBytes[12...].map(String.init).joined(separator: ".")
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written = addressBytes.withUnsafeBytes {
            inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "?" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// `192.168.1.50:8080`, `[::1]:8080`
    public var description: String {
        let host = self.host
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
