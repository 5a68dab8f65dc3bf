#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GateCore
import Threading
import Logging

/// Sends the trigger byte over UDP and decodes the ESP32's answer (SPEC §1).
///
/// Each attempt uses its own connected datagram socket: the kernel then
/// delivers only datagrams from the ESP32's address and port, and reports an
/// ICMP port-unreachable as `ECONNREFUSED`, which is the quick "nobody there"
/// that allows an immediate fallback.
public struct UDPAdapter: GateAdapter {
    public let kind = AdapterKind.udp
    public let target: SocketAddress
    let logger: Logger

    public init(target: SocketAddress, logger: Logger) {
        self.target = target
        self.logger = logger
    }

    public func attempt(deadline: MonotonicInstant) -> AdapterAttempt {
        let (target, logger) = (self.target, self.logger)
        return .onOwnThread("UDP exchange") { continuation, wake in
            UDPExchange(target: target, deadline: deadline, wake: wake, logger: logger, continuation: continuation).run()
        }
    }
}

/// One trigger and its answers, run on a thread of its own.
private struct UDPExchange {
    let target: SocketAddress
    let deadline: MonotonicInstant
    let wake: WakeSignal
    let logger: Logger
    let continuation: AsyncStream<AdapterEvent>.Continuation

    func run() {
        defer { continuation.finish() }
        let fd = socket(target.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            continuation.yield(.unreachable("cannot open a UDP socket: \(SystemError("socket"))"))
            return
        }
        defer { close(fd) }

        let connected = target.withSockAddr { connect(fd, $0, $1) }
        guard connected == 0 else {
            continuation.yield(.unreachable("cannot reach the ESP32 at \(target): \(SystemError("connect"))"))
            return
        }
        var trigger: UInt8 = 0x01
        guard send(fd, &trigger, 1, 0) == 1 else {
            continuation.yield(.unreachable("cannot send the trigger to \(target): \(SystemError("send"))"))
            return
        }
        logger.debug("trigger sent", metadata: ["adapter": "udp", "target": "\(target)"])
        continuation.yield(.sent)
        receive(on: fd)
    }

    private func receive(on fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else {
                continuation.yield(.deadlineReached)
                return
            }
            // Round up so that the wake-up is never before the deadline.
            let remaining = deadline.nanoseconds - now.nanoseconds
            let timeoutMs = Int32(clamping: (remaining + 999_999) / 1_000_000)
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, nfds_t(fds.count), timeoutMs)
            if ready < 0 {
                if errno == EINTR { continue }
                continuation.yield(.unreachable("cannot wait for the ESP32's answer: \(SystemError("poll"))"))
                return
            }
            if fds[1].revents != 0 {
                return  // the opening is decided; nobody listens any more
            }
            if ready == 0 || fds[0].revents == 0 { continue }

            var source = sockaddr_storage()
            var sourceLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT), $0, &sourceLength)
                }
            }
            if count < 0 {
                let code = errno
                switch code {
                case EINTR, EAGAIN, EWOULDBLOCK:
                    continue
                case ECONNREFUSED:
                    continuation.yield(.unreachable("nothing listens at \(target) (ICMP port unreachable)"))
                    return
                default:
                    continuation.yield(.unreachable("cannot receive from \(target): \(SystemError("recvfrom", code: code))"))
                    return
                }
            }
            // The connected socket already filters by source; checked again so that the
            // rule of SPEC §1 holds even if the socket setup changes.
            if let sender = SocketAddress(storage: source), sender != target {
                logger.debug("datagram from another address ignored", metadata: ["adapter": "udp", "from": "\(sender)"])
                continue
            }
            let datagram = buffer[0..<count]
            logger.debug("datagram received", metadata: [
                "adapter": "udp", "bytes": "\(datagram.map { UDPExchange.hex($0) }.joined(separator: " "))",
            ])
            for event in UDPReplyDecoder.events(for: datagram) {
                continuation.yield(event)
            }
        }
    }

    static func hex(_ byte: UInt8) -> String {
        let text = String(byte, radix: 16)
        return "0x" + (text.count == 1 ? "0" + text : text)
    }
}
