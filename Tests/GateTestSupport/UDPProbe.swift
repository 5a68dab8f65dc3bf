import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway UDP client: its own fresh socket (so its own source port), sending to one
/// target and collecting whatever comes back, with deadlines enforced by poll(2).
///
/// Arrival times are the kernel's receive timestamps (SO_TIMESTAMPNS), not the time this
/// thread got around to reading: on a loaded machine a late read would otherwise shrink the
/// measured gap between 0x01 and 0x00 below the hold the device really kept.
public final class UDPProbe {
    public struct Datagram: Equatable {
        public let bytes: [UInt8]
        /// Wall clock (CLOCK_REALTIME) since the Unix epoch, comparable with `UDPProbe.now()`.
        public let arrival: Duration
        /// `127.0.0.1:8080` / `[::1]:8080`.
        public let from: String
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ operation: String, _ code: Int32 = errno) {
            description = "\(operation): \(String(cString: strerror(code)))"
        }
    }

    /// SO_TIMESTAMPNS (the "old" 64-bit timespec form on 64-bit Linux); glibc defines it by a
    /// macro expression Swift cannot import.
    private static let soTimestampNS: Int32 = 35

    public let host: String
    public let port: UInt16
    private let fd: Int32
    private let target: sockaddr_storage
    private let targetLength: socklen_t

    /// A socket of the family of `host` (an IPv4 or IPv6 literal, no brackets), bound to an
    /// ephemeral port of the matching loopback/wildcard address.
    public init(host: String, port: UInt16) throws {
        self.host = host
        self.port = port
        var storage = sockaddr_storage()
        let family: Int32
        if host.contains(":") {
            family = AF_INET6
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &sin6.sin6_addr) == 1 else { throw Failure("inet_pton \(host)", EINVAL) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: sin6) { raw.copyMemory(from: $0) } }
            targetLength = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            family = AF_INET
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &sin.sin_addr) == 1 else { throw Failure("inet_pton \(host)", EINVAL) }
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: sin) { raw.copyMemory(from: $0) } }
            targetLength = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        target = storage
        fd = socket(family, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket") }
        #if arch(x86_64) || arch(arm64)
        // Only where the "old" timespec is two 64-bit fields, as `timestamp` parses it;
        // elsewhere arrival falls back to the time of reading.
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, Self.soTimestampNS, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
        // Bound now (wildcard, port 0) so that `localPort()` is known before the first send.
        var local = sockaddr_storage()
        local.ss_family = sa_family_t(family)
        let rc = withUnsafeBytes(of: &local) { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), targetLength)
        }
        guard rc == 0 else {
            let failure = Failure("bind")
            close(fd)
            throw failure
        }
    }

    deinit {
        close(fd)
    }

    /// CLOCK_REALTIME now, in the same scale as `Datagram.arrival`.
    public static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }

    func localPort() throws -> UInt16 {
        var local = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutableBytes(of: &local) { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        guard rc == 0 else { throw Failure("getsockname") }
        return withUnsafeBytes(of: local) { raw in
            local.ss_family == sa_family_t(AF_INET6)
                ? UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in6.self).sin6_port)
                : UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in.self).sin_port)
        }
    }

    /// This probe's address as the simulator reports senders: `127.0.0.1:PORT`, `[::1]:PORT`.
    public func localEndpoint() throws -> String {
        host.contains(":") ? "[\(host)]:\(try localPort())" : "\(host):\(try localPort())"
    }

    /// Sends one datagram to the target; returns the wall-clock time just before sending.
    @discardableResult
    public func send(_ bytes: [UInt8]) throws -> Duration {
        let sentAt = Self.now()
        var target = self.target
        let sent = withUnsafeBytes(of: &target) { raw in
            sendto(fd, bytes, bytes.count, 0, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), targetLength)
        }
        guard sent == bytes.count else { throw Failure("sendto \(host):\(port)") }
        return sentAt
    }

    /// Datagrams that arrive within `timeout`, returning early once `count` have come.
    /// ICMP errors (nobody listening) are skipped: to a test they mean "no answer".
    public func receive(count: Int = .max, within timeout: Duration) throws -> [Datagram] {
        let deadline = ContinuousClock.now + timeout
        var received: [Datagram] = []
        while received.count < count {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            let ms = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(max(1, ms)))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { throw Failure("poll") }
            if ready == 0 { break }
            if let datagram = try receiveOne() { received.append(datagram) }
        }
        return received
    }

    /// Everything that arrives within `timeout`: for "nothing (more) must come" checks.
    public func receiveAll(within timeout: Duration) throws -> [Datagram] {
        try receive(count: .max, within: timeout)
    }

    private func receiveOne() throws -> Datagram? {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var peer = sockaddr_storage()
        let controlSize = 256
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlSize, alignment: 16)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: controlSize)
        var controlLength = 0
        let count = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutableBytes(of: &peer) { peerBytes in
                var iov = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                return withUnsafeMutablePointer(to: &iov) { iovPointer in
                    var message = msghdr()
                    message.msg_name = peerBytes.baseAddress
                    message.msg_namelen = socklen_t(peerBytes.count)
                    message.msg_iov = iovPointer
                    message.msg_iovlen = 1
                    message.msg_control = control
                    message.msg_controllen = controlSize
                    let result = recvmsg(fd, &message, Int32(MSG_DONTWAIT))
                    controlLength = Int(message.msg_controllen)
                    return result
                }
            }
        }
        if count < 0 {
            switch errno {
            case EAGAIN, EWOULDBLOCK, EINTR, ECONNREFUSED: return nil
            default: throw Failure("recvmsg")
            }
        }
        let arrival = Self.timestamp(control, length: controlLength) ?? Self.now()
        return Datagram(bytes: Array(buffer[..<count]), arrival: arrival, from: Self.describe(peer))
    }

    /// Walks the control messages (cmsghdr: size_t len, int level, int type, then the data
    /// at the next 8-byte boundary) for the SCM_TIMESTAMPNS timespec.
    private static func timestamp(_ control: UnsafeMutableRawPointer, length: Int) -> Duration? {
        let headerSize = 16
        var offset = 0
        while offset + headerSize <= length {
            let messageLength = control.load(fromByteOffset: offset, as: Int.self)
            let level = control.load(fromByteOffset: offset + 8, as: Int32.self)
            let type = control.load(fromByteOffset: offset + 12, as: Int32.self)
            guard messageLength >= headerSize else { return nil }
            if level == SOL_SOCKET && type == soTimestampNS && messageLength >= headerSize + 16 {
                let seconds = control.load(fromByteOffset: offset + headerSize, as: Int64.self)
                let nanoseconds = control.load(fromByteOffset: offset + headerSize + 8, as: Int64.self)
                return .seconds(seconds) + .nanoseconds(nanoseconds)
            }
            offset += (messageLength + 7) & ~7
        }
        return nil
    }

    private static func text(_ buffer: [CChar]) -> String {
        buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    private static func describe(_ storage: sockaddr_storage) -> String {
        withUnsafeBytes(of: storage) { raw in
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if storage.ss_family == sa_family_t(AF_INET6) {
                var address = raw.loadUnaligned(as: sockaddr_in6.self)
                inet_ntop(AF_INET6, &address.sin6_addr, &buffer, socklen_t(buffer.count))
                return "[\(text(buffer))]:\(UInt16(bigEndian: address.sin6_port))"
            }
            var address = raw.loadUnaligned(as: sockaddr_in.self)
            inet_ntop(AF_INET, &address.sin_addr, &buffer, socklen_t(buffer.count))
            return "\(text(buffer)):\(UInt16(bigEndian: address.sin_port))"
        }
    }
}
