import Glibc
import Logging
import Plumbing
import Synchronization

/// The ESP32's UDP side: one socket, a receive thread that blocks in poll(2), and replies
/// sent from the same socket so that they come from the address and port the client
/// triggered (the client ignores anything else).
///
/// Protocol 1's wire encoding of the relay's reports: activated 0x01, released 0x00,
/// garbage 0x7f. Under protocol 2 every datagram goes to the device, which sends its
/// replies through `send(_:to:what:)`.
final class UDPTransport: Sendable {
    /// The address actually bound; with port 0 this names the port the kernel chose.
    let localAddress: SocketAddress
    private let fd: Int32
    /// Signalled once to make the receive thread return; a pipe rather than closing the
    /// socket under a thread that may be inside poll(2) on it.
    private let wake: WakeSignal
    private let firmware: Firmware
    private let logger: Logger
    private let thread = Mutex<OSThread.Joinable?>(nil)

    init(bindingTo address: SocketAddress, firmware: Firmware, logger: Logger) throws(SystemError) {
        let (fd, bound) = try bindUDPSocket(to: address)
        do {
            wake = try WakeSignal()
        } catch {
            close(fd)
            throw SystemError("pipe", code: error.code)
        }
        self.fd = fd
        self.localAddress = bound
        self.firmware = firmware
        self.logger = logger
    }

    deinit {
        // Pending release reports hold a reference to the transport through their reply
        // closure, so the socket cannot be closed while one may still be sent on it.
        close(fd)
    }

    func start() throws(SystemError) {
        let started = try OSThread.Joinable { [self] in receiveLoop() }
        thread.withLock { $0 = started }
    }

    /// Stops receiving and waits for the receive thread to finish. Reports already
    /// scheduled by the relay may still be sent.
    func stop() {
        wake.signal()
        thread.withLock { $0.take() }?.join()
    }

    private func receiveLoop() {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            if case .failure(let error) = Poll.wait(&fds, until: nil) {
                logger.critical("\(error); exiting")
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
                    recvfrom(
                        fd,
                        bytes.baseAddress,
                        bytes.count,
                        Int32(MSG_DONTWAIT),
                        raw.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                        &length
                    )
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
            guard let peer = SocketAddress(storage: storage) else {
                logger.debug("ignored datagram from an address that is neither IPv4 nor IPv6")
                continue
            }
            handle(buffer[..<count], from: peer)
        }
    }

    private func handle(_ datagram: ArraySlice<UInt8>, from peer: SocketAddress) {
        logger.debug("received \(datagram.count) byte(s) from \(peer): \(hex(datagram))")
        switch firmware {
        case .v1(let relay):
            handleV1(datagram, from: peer, relay: relay)
        case .v2(let device):
            device.received(.datagram(Array(datagram), from: peer))
        }
    }

    private func handleV1(_ datagram: ArraySlice<UInt8>, from peer: SocketAddress, relay: Relay) {
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

    private func send(_ report: V1Report, to peer: SocketAddress) {
        let byte: UInt8 =
            switch report {
            case .activated: 0x01
            case .released: 0x00
            case .garbage: 0x7f
            }
        send([byte], to: peer, what: "\(hex([byte])) (\(report))")
    }

    /// One datagram from the device's socket, never blocking (a full send buffer loses
    /// it, as a network would); `what` names it in the log line.
    func send(_ bytes: [UInt8], to peer: SocketAddress, what: String) {
        let sent = retryingOnInterrupt {
            peer.withSockaddr { address, length in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT), address, length) }
            }
        }
        if sent == bytes.count {
            logger.info("sent \(what) to \(peer)")
        } else {
            let failure = SystemError("sendto", code: errno)
            logger.warning("sending \(what) to \(peer) failed: \(failure)")
        }
    }
}

private func hex<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
    if bytes.isEmpty { return "(empty)" }
    return bytes.prefix(16).map(hex8).joined(separator: " ") + (bytes.count > 16 ? " …" : "")
}
