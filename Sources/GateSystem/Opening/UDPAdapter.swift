import GateCore
import Logging
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Sends the trigger byte over UDP and decodes the ESP32's answer (docs/CONTRACT.md#protocol-over-udp).
///
/// The attempt resolves the host within its own budget: a name that resolves
/// only after the deadline sends nothing (the permit refuses), so a slow
/// resolver can never turn into a second trigger.
///
/// Each attempt uses its own connected datagram socket: the kernel then
/// delivers only datagrams from the ESP32's address and port, and reports an
/// ICMP port-unreachable as `ECONNREFUSED`, which is the quick "nobody there"
/// that allows an immediate fallback.
public struct UDPAdapter: GateAdapter {
    public let kind = AdapterKind.udp
    let host: String
    let port: Int
    /// Off-link addresses are not sent to (`--via auto`); forced UDP tries anyway.
    let onLinkOnly: Bool
    let interfaces: @Sendable () -> Result<[InterfaceAddress], SystemError>
    let logger: Logger
    /// What goes out: v1's byte `0x01`, or a protocol v2 frame's 32 bytes.
    let trigger: [UInt8]
    /// What a datagram from the ESP32 says: v1's `UDPReplyDecoder`, or under v2 the
    /// genuine reply for the frame (anything else is nothing, ignored).
    let decode: @Sendable (ArraySlice<UInt8>) -> [AdapterEvent]

    public init(
        host: String,
        port: Int,
        onLinkOnly: Bool,
        interfaces: @escaping @Sendable () -> Result<[InterfaceAddress], SystemError>,
        logger: Logger,
        trigger: [UInt8] = [0x01],
        decode: @escaping @Sendable (ArraySlice<UInt8>) -> [AdapterEvent] = { UDPReplyDecoder.events(for: $0) }
    ) {
        self.host = host
        self.port = port
        self.onLinkOnly = onLinkOnly
        self.interfaces = interfaces
        self.logger = logger
        self.trigger = trigger
        self.decode = decode
    }

    public func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            ticket.report(.unreachable("cannot prepare the UDP exchange: \(SystemError("pipe", code: error.code))"))
            ticket.finish()
            return AttemptCancel {}
        }
        let adapter = self
        if let failure = OSThread.detach({
            defer { ticket.finish() }
            guard let target = adapter.target(ticket) else { return }
            UDPExchange(
                target: target,
                ticket: ticket,
                wake: wake,
                logger: adapter.logger,
                trigger: adapter.trigger,
                decode: adapter.decode
            ).run()
        }) {
            ticket.report(
                .unreachable("cannot start the UDP exchange: \(SystemError("pthread_create", code: failure))")
            )
            ticket.finish()
        }
        return AttemptCancel { wake.signal() }
    }

    /// The address to send to, resolved on the attempt's thread; nil after reporting why not.
    private func target(_ ticket: AttemptTicket) -> SocketAddress? {
        let literal = IPAddress(literal: host) != nil
        if !literal { ticket.doing("resolving \(host)") }
        switch HostResolver.resolve(host: host, port: port) {
        case .success(let address):
            if !literal, onLinkOnly {
                let verdict = LinkCheck.verdict(for: address.ip, interfaces: interfaces, logger: logger)
                logger.debug(
                    "on-link check",
                    metadata: ["adapter": "udp", "target": "\(address)", "verdict": "\(verdict)"]
                )
                if verdict == .offLink {
                    ticket.report(.unreachable("\(host) (\(address.ip)) is not on a directly connected network"))
                    return nil
                }
            }
            ticket.doing("sending to \(address)")
            return address
        case .failure(let failure):
            ticket.report(.unreachable(failure.message))
            return nil
        }
    }
}

/// One trigger and its answers, run on a thread of its own.
private struct UDPExchange {
    let target: SocketAddress
    let ticket: AttemptTicket
    let wake: WakeSignal
    let logger: Logger
    let trigger: [UInt8]
    let decode: @Sendable (ArraySlice<UInt8>) -> [AdapterEvent]

    func run() {
        let fd = socket(target.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            ticket.report(.unreachable("cannot open a UDP socket: \(SystemError("socket"))"))
            return
        }
        defer { close(fd) }

        let connected = target.withSockaddr { connect(fd, $0, $1) }
        guard connected == 0 else {
            ticket.report(.unreachable("cannot reach the ESP32 at \(target): \(SystemError("connect"))"))
            return
        }
        var failure: SystemError?
        let sent = ticket.send {
            let count = trigger.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            if count != trigger.count { failure = SystemError("send") }
        }
        guard sent else { return }
        if let failure {
            ticket.report(.unreachable("cannot send the trigger to \(target): \(failure)"))
            return
        }
        logger.debug("trigger sent", metadata: ["adapter": "udp", "target": "\(target)"])
        receive(on: fd)
    }

    private func receive(on fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let now = ticket.now()
            guard now < ticket.deadline else {
                // What arrived while this thread was not running (a paused or starved
                // process) is read before concluding "no answer": it is evidence.
                guard drain(fd, into: &buffer) else { return }
                ticket.report(.deadlineReached)
                return
            }
            let remaining = ticket.deadline.nanoseconds - now.nanoseconds
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
            ]
            if case .failure(let error) = Poll.wait(&fds, until: MonotonicNanoseconds.now() + remaining) {
                ticket.report(.unreachable("cannot wait for the ESP32's answer: \(error)"))
                return
            }
            if fds[0].revents != 0 {
                guard readOne(fd, into: &buffer) else { return }
                continue
            }
            if fds[1].revents != 0 {
                // Asked to finish: report what already arrived, then stop.
                _ = drain(fd, into: &buffer)
                return
            }
        }
    }

    /// Reads every datagram already queued; false when the exchange is over.
    private func drain(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        while Poll.isReadable(fd) {
            if !readOne(fd, into: &buffer) { return false }
        }
        return true
    }

    /// Reads one datagram and reports it; false when the exchange is over (refused).
    private func readOne(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
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
                return true
            case ECONNREFUSED:
                ticket.report(.unreachable("nothing listens at \(target) (ICMP port unreachable)"))
                return false
            default:
                ticket.report(.unreachable("cannot receive from \(target): \(SystemError("recvfrom", code: code))"))
                return false
            }
        }
        // The connected socket already filters by source; checked again so that the
        // rule of docs/CONTRACT.md#protocol-over-udp holds even if the socket setup changes.
        if let sender = SocketAddress(storage: source), sender != target {
            logger.debug("datagram from another address ignored", metadata: ["adapter": "udp", "from": "\(sender)"])
            return true
        }
        let datagram = buffer[0..<count]
        logger.debug(
            "datagram received",
            metadata: [
                "adapter": "udp", "bytes": "\(datagram.map { UDPExchange.hex($0) }.joined(separator: " "))",
            ]
        )
        for event in decode(datagram) {
            ticket.report(event)
        }
        return true
    }

    static func hex(_ byte: UInt8) -> String {
        let text = String(byte, radix: 16)
        return "0x" + (text.count == 1 ? "0" + text : text)
    }
}
