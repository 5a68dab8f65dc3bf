#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as raw network-order bytes.
///
/// Parsing uses `inet_pton`, the same parser the socket layer uses, so that
/// what validation accepts is exactly what can be connected to.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public enum Family: Sendable, Hashable { case v4, v6 }

    /// 4 bytes for IPv4, 16 for IPv6, network order.
    public let bytes: [UInt8]

    public var family: Family { bytes.count == 4 ? .v4 : .v6 }

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses `192.168.1.50`, `::1`, `fe80::1` or `[::1]` (not `[192.168.1.50]`). Zone suffixes
    /// (`%eth0`) are not accepted: the socket layer cannot carry them here.
    public init?(literal: String) {
        // inet_pton stops at a NUL: without this check "127.0.0.1\0junk" would pass.
        guard !literal.utf8.contains(0) else { return nil }
        var text = Substring(literal)
        var bracketed = false
        if text.hasPrefix("["), text.hasSuffix("]") {
            text = text.dropFirst().dropLast()
            bracketed = true
        }
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        let string = String(text)
        if !string.contains(":") {
            // Brackets are IPv6 notation only.
            guard !bracketed else { return nil }
            var raw = in_addr()
            guard inet_pton(AF_INET, string, &raw) == 1 else { return nil }
            self.bytes = withUnsafeBytes(of: &raw) { Array($0) }
        } else {
            var raw = in6_addr()
            guard inet_pton(AF_INET6, string, &raw) == 1 else { return nil }
            self.bytes = withUnsafeBytes(of: &raw) { Array($0) }
        }
    }

    /// 127.0.0.0/8, ::1, and IPv4-mapped loopback (::ffff:127.x.y.z).
    public var isLoopback: Bool {
        switch family {
        case .v4:
            return bytes[0] == 127
        case .v6:
            if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
            return isV4Mapped && bytes[12] == 127
        }
    }

    /// `::ffff:a.b.c.d`
    public var isV4Mapped: Bool {
        family == .v6 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
    }

    /// True when both addresses agree on every bit that `mask` sets.
    /// Families must match; a mask of another length never matches.
    public func sharesSubnet(with other: IPAddress, mask: IPAddress) -> Bool {
        guard bytes.count == other.bytes.count, bytes.count == mask.bytes.count else { return false }
        for index in bytes.indices where (bytes[index] ^ other.bytes[index]) & mask.bytes[index] != 0 {
            return false
        }
        return true
    }

    public var description: String {
        switch family {
        case .v4:
            return bytes.map(String.init).joined(separator: ".")
        case .v6:
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: bytes) }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else {
                return bytes.map { String($0, radix: 16) }.joined(separator: ":")
            }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
