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
    private let socket: LoopbackSocket
    private let target: LoopbackSocket.Address
    private var fd: Int32 { socket.fd }

    /// A socket of the family of `host` (an IPv4 or IPv6 literal, no brackets), bound to an
    /// ephemeral port of the matching wildcard address.
    public init(host: String, port: UInt16) throws {
        self.host = host
        self.port = port
        target = try LoopbackSocket.Address(host: host, port: port)
        // Bound now (wildcard, port 0) so that `localPort()` is known before the first send.
        socket = try LoopbackSocket(.udp, host: target.isIPv6 ? "::" : "0.0.0.0")
        #if arch(x86_64) || arch(arm64)
        // Only where the "old" timespec is two 64-bit fields, as `timestamp` parses it;
        // elsewhere arrival falls back to the time of reading.
        var on: Int32 = 1
        _ = setsockopt(socket.fd, SOL_SOCKET, Self.soTimestampNS, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// CLOCK_REALTIME now, in the same scale as `Datagram.arrival`.
    public static func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }

    public func localPort() throws -> UInt16 {
        socket.port
    }

    /// This probe's address as the simulator reports senders: `127.0.0.1:PORT`, `[::1]:PORT`.
    public func localEndpoint() throws -> String {
        host.contains(":") ? "[\(host)]:\(try localPort())" : "\(host):\(try localPort())"
    }

    /// Sends one datagram to the target; returns the wall-clock time just before sending.
    @discardableResult
    public func send(_ bytes: [UInt8]) throws -> Duration {
        let sentAt = Self.now()
        do {
            try socket.send(bytes, to: target)
        } catch let failure as LoopbackSocket.Failure {
            throw Failure("sendto \(host):\(port)", failure.code)
        }
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
        return Datagram(
            bytes: Array(buffer[..<count]),
            arrival: arrival,
            from: LoopbackSocket.Address(storage: peer)?.description ?? "?"
        )
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
}
