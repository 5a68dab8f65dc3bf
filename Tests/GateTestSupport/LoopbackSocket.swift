import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The one way the test fixtures open an IP socket: UDP or TCP, bound to a local
/// address (127.0.0.1 unless told: `::1`, a wildcard `0.0.0.0`/`::`, or an address of
/// a network namespace) on port 0, so that the kernel picks a free port, unless told.
/// Every fixture that stands where the ESP32, a broker or a silent server would be is
/// built on it: `FakeESP32`, `UDPProbe`, `SilentTCPListener`, `ChaosSlowProxy`,
/// `ChaosRelay`, the free-port and "is anyone there" helpers.
///
/// Always `SOCK_CLOEXEC`: a `gate` or mosquitto started by a test never inherits a fixture's
/// socket. Owns its descriptor and closes it in `deinit`; `descriptor(...)` hands a raw one
/// to a fixture that manages its descriptors itself.
public final class LoopbackSocket: @unchecked Sendable {
    public enum Kind: Sendable {
        case udp
        case tcp

        var type: Int32 {
            switch self {
            case .udp: Int32(SOCK_DGRAM.rawValue)
            case .tcp: Int32(SOCK_STREAM.rawValue)
            }
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        /// The `errno` of the call that failed.
        public let code: Int32

        public init(_ operation: String, code: Int32 = errno) {
            self.code = code
            description = "\(operation): \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    /// An IPv4 or IPv6 address and port.
    public struct Address: Sendable, Hashable, CustomStringConvertible {
        /// An IP literal without brackets: `127.0.0.1`, `::1`.
        public let host: String
        public let port: UInt16

        public init(host: String, port: UInt16) throws {
            var probe = in6_addr()
            let family = host.contains(":") ? AF_INET6 : AF_INET
            guard inet_pton(family, host, &probe) == 1 else { throw Failure("inet_pton \(host)", code: EINVAL) }
            self.host = host
            self.port = port
        }

        /// What `recvfrom`, `recvmsg` or `getsockname` filled in; nil for another family.
        public init?(storage: sockaddr_storage) {
            let described: (String, UInt16)? = withUnsafeBytes(of: storage) { raw in
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
                switch Int32(storage.ss_family) {
                case AF_INET6:
                    var address = raw.loadUnaligned(as: sockaddr_in6.self)
                    guard inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count)) != nil else {
                        return nil
                    }
                    return (Self.string(text), UInt16(bigEndian: address.sin6_port))
                case AF_INET:
                    var address = raw.loadUnaligned(as: sockaddr_in.self)
                    guard inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count)) != nil else { return nil }
                    return (Self.string(text), UInt16(bigEndian: address.sin_port))
                default:
                    return nil
                }
            }
            guard let described else { return nil }
            (host, port) = described
        }

        public var isIPv6: Bool { host.contains(":") }
        public var family: Int32 { isIPv6 ? AF_INET6 : AF_INET }

        /// `127.0.0.1:8080`, `[::1]:8080`.
        public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// The same host on another port.
        public func with(port: UInt16) -> Address {
            // The host was validated when this address was made.
            (try? Address(host: host, port: port)) ?? self
        }

        /// Where a datagram to "this host" goes: the loopback address of the family when
        /// this is a wildcard.
        var reachable: Address {
            switch host {
            case "0.0.0.0": (try? Address(host: "127.0.0.1", port: port)) ?? self
            case "::": (try? Address(host: "::1", port: port)) ?? self
            default: self
            }
        }

        public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
            var storage = sockaddr_storage()
            let length: socklen_t
            if isIPv6 {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = port.bigEndian
                _ = inet_pton(AF_INET6, host, &address.sin6_addr)
                withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: address) { raw.copyMemory(from: $0) }
                }
                length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            } else {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = port.bigEndian
                _ = inet_pton(AF_INET, host, &address.sin_addr)
                withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: address) { raw.copyMemory(from: $0) }
                }
                length = socklen_t(MemoryLayout<sockaddr_in>.size)
            }
            return try withUnsafePointer(to: &storage) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
            }
        }

        private static func string(_ text: [CChar]) -> String {
            String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    public let kind: Kind
    public let fd: Int32
    /// The bound address, with the port the kernel chose.
    public let address: Address

    public var port: UInt16 { address.port }

    /// - Parameters:
    ///   - host: the local address to bind: `127.0.0.1`, `::1`, `0.0.0.0`, `::`, or a
    ///     namespace's own address.
    ///   - port: 0 for a free one.
    ///   - backlog: TCP only: listen with this backlog.
    ///   - reuseAddress: `SO_REUSEADDR` before binding (as mosquitto does).
    ///   - nonBlocking: `SOCK_NONBLOCK`.
    public init(
        _ kind: Kind,
        host: String = "127.0.0.1",
        port: UInt16 = 0,
        listen backlog: Int32? = nil,
        reuseAddress: Bool = false,
        nonBlocking: Bool = false
    ) throws {
        let bound = try Self.descriptor(
            kind,
            host: host,
            port: port,
            listen: backlog,
            reuseAddress: reuseAddress,
            nonBlocking: nonBlocking
        )
        self.kind = kind
        self.fd = bound.fd
        self.address = bound.address
    }

    deinit {
        close(fd)
    }

    /// A bound (and, with `backlog`, listening) descriptor that the caller owns and closes.
    public static func descriptor(
        _ kind: Kind,
        host: String = "127.0.0.1",
        port: UInt16 = 0,
        listen backlog: Int32? = nil,
        reuseAddress: Bool = false,
        nonBlocking: Bool = false
    ) throws -> (fd: Int32, address: Address) {
        let local = try Address(host: host, port: port)
        var type = kind.type | Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { type |= Int32(SOCK_NONBLOCK.rawValue) }
        let fd = socket(local.family, type, 0)
        guard fd >= 0 else { throw Failure("socket") }
        do {
            if reuseAddress {
                var yes: Int32 = 1
                guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                    throw Failure("setsockopt SO_REUSEADDR")
                }
            }
            guard local.withSockaddr({ bind(fd, $0, $1) }) == 0 else { throw Failure("bind \(local)") }
            if let backlog {
                guard Glibc.listen(fd, backlog) == 0 else { throw Failure("listen \(local)") }
            }
            return (fd, try boundAddress(of: fd))
        } catch {
            close(fd)
            throw error
        }
    }

    /// A TCP or UDP descriptor connected to `peer` (an ephemeral local port); the caller owns it.
    public static func connectedDescriptor(_ kind: Kind, to peer: Address) throws -> Int32 {
        let fd = socket(peer.family, kind.type | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket") }
        guard peer.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else {
            let failure = Failure("connect \(peer)")
            close(fd)
            throw failure
        }
        return fd
    }

    /// A port of `host` that was free a moment ago (bound to port 0, read, closed). Racy by
    /// nature: someone else may take it before it is used.
    public static func freePort(_ kind: Kind, host: String = "127.0.0.1") throws -> UInt16 {
        try LoopbackSocket(kind, host: host).port
    }

    /// Whether something accepts TCP connections on `host`:`port` right now.
    public static func acceptsConnections(port: UInt16, host: String = "127.0.0.1") -> Bool {
        guard let peer = try? Address(host: host, port: port), let fd = try? connectedDescriptor(.tcp, to: peer) else {
            return false
        }
        close(fd)
        return true
    }

    /// Connects this socket to `peer` (UDP: only its datagrams are received, and ICMP
    /// errors are reported).
    public func connect(to peer: Address) throws {
        guard peer.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 else { throw Failure("connect \(peer)") }
    }

    /// Sends `bytes` whole, to `peer` (UDP) or on the connection (nil).
    public func send(_ bytes: [UInt8], to peer: Address? = nil) throws {
        let sent: Int
        if let peer {
            sent = peer.withSockaddr { name, length in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), name, length) }
            }
        } else {
            sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        guard sent == bytes.count else { throw Failure("send to \(peer?.description ?? "the peer")") }
    }

    /// Sends to `port` on this socket's own host (its loopback address when bound to a wildcard).
    public func send(_ bytes: [UInt8], toPort port: UInt16) throws {
        try send(bytes, to: address.reachable.with(port: port))
    }

    /// Whether something can be read within `timeout` (a datagram, a connection, an error).
    public func waitUntilReadable(within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            let (seconds, attoseconds) = max(left, .zero).components
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000))
            if ready < 0, errno == EINTR { continue }
            return ready > 0
        }
    }

    /// One datagram (or chunk) and who sent it. Without `waiting`, nil when nothing is
    /// queued; with it, waits up to that long first (nil if nothing came).
    public func receive(
        waiting timeout: Duration? = nil,
        capacity: Int = 2048
    ) throws -> (bytes: [UInt8], from: Address?)? {
        if let timeout, !waitUntilReadable(within: timeout) { return nil }
        var buffer = [UInt8](repeating: 0, count: capacity)
        var source = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let count = withUnsafeMutablePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                recvfrom(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
            }
        }
        if count < 0 {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK { return nil }
            throw Failure("recvfrom", code: code)
        }
        return (Array(buffer[0..<count]), length > 0 ? Address(storage: source) : nil)
    }

    /// Everything already queued, read without waiting (errors end it).
    public func drain() -> [[UInt8]] {
        var received: [[UInt8]] = []
        while let next = try? receive() { received.append(next.bytes) }
        return received
    }

    private static func boundAddress(of fd: Int32) throws -> Address {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure("getsockname") }
        guard let address = Address(storage: storage) else { throw Failure("getsockname", code: EAFNOSUPPORT) }
        return address
    }
}
