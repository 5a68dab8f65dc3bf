import Glibc
import Logging
import Synchronization

/// The ESP32's UDP side: one socket, a receive thread that blocks in poll(2), and replies
/// sent from the same socket so that they come from the address and port the client
/// triggered (the client ignores anything else).
///
/// Wire encoding of the relay's reports: activated 0x01, released 0x00, garbage 0x7f.
final class UDPTransport: Sendable {
    /// The address actually bound; with port 0 this names the port the kernel chose.
    let localAddress: SocketAddress
    private let fd: Int32
    /// Written once to make the receive thread return; a pipe rather than closing the socket
    /// under a thread that may be inside poll(2) on it.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let relay: Relay
    private let logger: Logger
    private let thread = Mutex<POSIXThread?>(nil)

    init(bindingTo address: SocketAddress, relay: Relay, logger: Logger) throws(SystemError) {
        let (fd, bound) = try bindUDPSocket(to: address)
        var pipeEnds: [Int32] = [-1, -1]
        // pipe2 is hidden behind _GNU_SOURCE; the simulator never execs, so plain pipe will do.
        guard pipe(&pipeEnds) == 0 else {
            let error = SystemError("pipe")
            close(fd)
            throw error
        }
        self.fd = fd
        self.localAddress = bound
        self.wakeRead = pipeEnds[0]
        self.wakeWrite = pipeEnds[1]
        self.relay = relay
        self.logger = logger
    }

    deinit {
        // Pending release reports hold a reference to the transport through their reply
        // closure, so the socket cannot be closed while one may still be sent on it.
        close(fd)
        close(wakeRead)
        close(wakeWrite)
    }

    static func encode(_ report: Report) -> UInt8 {
        switch report {
        case .activated: 0x01
        case .released: 0x00
        case .garbage: 0x7f
        }
    }

    func start() throws(SystemError) {
        let started = try POSIXThread { [self] in receiveLoop() }
        thread.withLock { $0 = started }
    }

    /// Stops receiving and waits for the receive thread to finish. Reports already
    /// scheduled by the relay may still be sent.
    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        let running = thread.withLock { thread in
            defer { thread = nil }
            return thread
        }
        running?.join()
    }

    private func receiveLoop() {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                logger.critical("\(SystemError("poll")); exiting")
                exit(1)
            }
            if fds[1].revents != 0 { return }
            if fds[0].revents != 0 && !drainSocket() {
                // A device that silently stops listening would make every later test time
                // out with no clue; dying loudly points at the cause.
                logger.critical("udp receive failed; exiting")
                exit(1)
            }
        }
    }

    /// Reads every datagram queued now, so one wake-up of poll(2) serves a burst.
    /// Returns false when the socket is unusable (poll would report it again at once).
    private func drainSocket() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutableBytes(of: &storage) { raw in
                    recvfrom(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT),
                             raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
                }
            }
            if count < 0 {
                let code = errno
                switch code {
                case EAGAIN, EWOULDBLOCK:
                    return true
                case EINTR:
                    continue
                case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH:
                    // An ICMP error for an earlier reply (a client gone before its 0x00). Linux
                    // drops these for unconnected sockets without IP_RECVERR, other systems
                    // may not; either way it must not stop the device from listening.
                    logger.debug("earlier reply not delivered: \(String(cString: strerror(code)))")
                    continue
                default:
                    logger.critical("\(SystemError("recvfrom", code: code))")
                    return false
                }
            }
            handle(buffer[..<count], from: SocketAddress(storage: storage, length: length))
        }
    }

    private func handle(_ datagram: ArraySlice<UInt8>, from peer: SocketAddress) {
        logger.debug("received \(datagram.count) byte(s) from \(peer): \(hex(datagram))")
        guard datagram.first == 0x01 else {
            logger.info("ignored datagram from \(peer): \(hex(datagram)) is not a trigger")
            return
        }
        if datagram.count > 1 {
            logger.info("trigger from \(peer) carries \(datagram.count - 1) extra byte(s); they are ignored")
        }
        logger.info("trigger received via udp from \(peer)")
        relay.trigger(via: .udp, from: peer.description) { [self] report in
            send(report, to: peer)
        }
    }

    private func send(_ report: Report, to peer: SocketAddress) {
        var byte = Self.encode(report)
        var sent: Int
        repeat {
            sent = peer.withSockaddr { sendto(fd, &byte, 1, Int32(MSG_DONTWAIT), $0, $1) }
        } while sent < 0 && errno == EINTR
        if sent == 1 {
            logger.info("sent \(hex([byte])) (\(report)) to \(peer)")
        } else {
            let failure = SystemError("sendto", code: errno)
            logger.warning("sending \(hex([byte])) (\(report)) to \(peer) failed: \(failure)")
        }
    }
}

private func hex<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
    if bytes.isEmpty { return "(empty)" }
    let shown = bytes.prefix(16).map { byte -> String in
        let digits = String(byte, radix: 16)
        return "0x" + (digits.count == 1 ? "0" + digits : digits)
    }
    return shown.joined(separator: " ") + (bytes.count > 16 ? " …" : "")
}
