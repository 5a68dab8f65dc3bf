#if canImport(Glibc)
import Glibc
#endif
import GateCore
import Synchronization

/// An MQTT 3.1.1 client over plain TCP for one opening: CONNECT, SUBSCRIBE,
/// PUBLISH at QoS 0, DISCONNECT (`MQTTPacket`, `MQTTPacketReader`). Owns its socket.
///
/// Why not libmosquitto here: loading it maps libssl and libcrypto too, and their
/// 4,000 symbol look-ups held `gate open --via mqtt` 1.5–2.2 ms before it could
/// connect, on every run, for a connection that uses no TLS. TLS brokers, the
/// daemon's warm link and the doctor still go through libmosquitto.
///
/// No keep-alive pings: an opening's connection lives at most its budget plus the
/// early exchange's hold (15 s), well inside the 60 s it announces.
final class PlainMQTTClient: MQTTSession {
    private struct Connection {
        var fd: Int32 = -1
        var reader = MQTTPacketReader()
        var lastPacketID: UInt16 = 0
        var heardFromBroker = false
    }

    let clientID: String
    private let username: String?
    /// Copied from the `Secret` and wiped once the CONNECT is sent.
    private let password: Mutex<[UInt8]?>
    private let handler: @Sendable (MQTTSessionEvent) -> Void
    /// One thread drives the client; the lock only makes that safe to state. Never
    /// held while the handler runs: the handler subscribes and publishes.
    private let connection = Mutex(Connection())

    init(clientID: String, username: String?, password: Secret?, handler: @escaping @Sendable (MQTTSessionEvent) -> Void) {
        self.clientID = clientID
        self.username = username
        self.password = Mutex(password?.withBytes { $0 })
        self.handler = handler
    }

    deinit {
        connection.withLock { connection in
            if connection.fd >= 0 { close(connection.fd) }
        }
        password.withLock { wipe(&$0) }
    }

    var socket: Int32 { connection.withLock { $0.fd } }

    /// Tries each address of `host` in turn, each until `deadline` at the latest,
    /// then sends CONNECT.
    func connect(host: String, port: Int, keepAlive: UInt16, deadline: MonotonicInstant) throws {
        let addresses: [SocketAddress]
        switch HostResolver.addresses(host: host, port: port, socketType: Int32(SOCK_STREAM.rawValue)) {
        case .success(let found): addresses = found
        case .failure(let failure): throw PlainMQTTError(failure.message)
        }
        var lastFailure = SystemError("connect", code: ECONNREFUSED)
        var connected: Int32 = -1
        for address in addresses {
            switch Self.open(address, deadline: deadline) {
            case .success(let fd): connected = fd
            case .failure(let failure): lastFailure = failure
            }
            if connected >= 0 { break }
        }
        guard connected >= 0 else { throw lastFailure }
        connection.withLock { $0.fd = connected }
        let packet = try password.withLock { password in
            defer { wipe(&password) }
            return try MQTTPacket.connect(clientID: clientID, keepAlive: keepAlive, username: username, password: password)
        }
        try send(packet, wipingAfter: true)
    }

    func loopOnce(timeoutMs: Int32) -> String? {
        let fd = socket
        guard fd >= 0 else { return "not connected" }
        var waiting = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&waiting, 1, timeoutMs)
        if ready < 0 {
            return errno == EINTR ? nil : SystemError("poll").description
        }
        guard ready > 0 else { return nil }
        var packets: [MQTTPacketReader.Packet] = []
        var ending: String?
        var chunk = [UInt8](repeating: 0, count: 4096)
        connection.withLock { connection in
            while ending == nil {
                let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0 {
                    connection.reader.append(chunk[0..<count])
                    connection.heardFromBroker = true
                    continue
                }
                if count == 0 {
                    ending = "the broker closed the connection"
                } else if errno == EINTR {
                    continue
                } else if errno != EAGAIN, errno != EWOULDBLOCK {
                    ending = SystemError("recv").description
                }
                break
            }
            if let words = ending, !connection.heardFromBroker {
                // A TLS listener drops a plain CONNECT without a word: the likeliest cause.
                ending = "\(words), before any answer (if the broker expects TLS, set tls = true in [mqtt])"
            }
            // What arrived before the end is handled first: a refusing broker sends its
            // CONNACK and closes.
            do {
                while let packet = try connection.reader.next() {
                    packets.append(packet)
                }
            } catch {
                ending = "the broker sent \(error), which is not MQTT 3.1.1"
            }
        }
        for packet in packets {
            dispatch(packet)
        }
        return ending
    }

    func subscribe(topic: String) throws -> Int32 {
        let packetID = connection.withLock { connection -> UInt16 in
            connection.lastPacketID = connection.lastPacketID == .max ? 1 : connection.lastPacketID + 1
            return connection.lastPacketID
        }
        try send(MQTTPacket.subscribe(packetID: packetID, topic: topic, qos: 0), wipingAfter: false)
        return Int32(packetID)
    }

    func publish(topic: String, payload: [UInt8]) throws {
        try send(MQTTPacket.publish(topic: topic, payload: payload, retain: false), wipingAfter: false)
    }

    /// Sends DISCONNECT (the broker then drops the session without a will) and closes.
    func disconnect() {
        try? send(MQTTPacket.disconnect, wipingAfter: false)
        connection.withLock { connection in
            if connection.fd >= 0 { close(connection.fd) }
            connection.fd = -1
        }
    }

    func connackWords(for code: Int32) -> String {
        MQTTPacket.connackWords(for: code)
    }

    private func dispatch(_ packet: MQTTPacketReader.Packet) {
        switch packet {
        case .connack(_, let code):
            handler(.connected(code: Int32(code)))
        case .suback(let packetID, let granted):
            handler(.subscribed(messageID: Int32(packetID), grantedQoS: granted.map(Int32.init)))
        case .publish(let topic, let payload, _, let retain, _):
            // Subscribed at QoS 0, so the broker delivers at QoS 0; a higher QoS from a
            // broker that ignores that is read all the same and not acknowledged: the
            // connection ends with the opening anyway.
            handler(.message(topic: topic, payload: payload, retained: retain))
        case .pingresp:
            break
        case .unexpected(let name):
            handler(.trace(text: "ignored a \(name) from the broker"))
        }
    }

    /// Writes all of `bytes`; a full socket buffer (which a few hundred bytes on a
    /// fresh connection never meet) is waited for up to a second.
    private func send(_ bytes: [UInt8], wipingAfter: Bool) throws {
        var bytes = bytes
        defer { if wipingAfter { wipe(&bytes) } }
        let fd = socket
        guard fd >= 0 else { throw PlainMQTTError("send: not connected") }
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { buffer in
                Glibc.send(fd, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count >= 0 {
                offset += count
                continue
            }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { throw SystemError("send", code: code) }
            var writable = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&writable, 1, 1000) > 0 else { throw PlainMQTTError("send: the socket stayed full for a second") }
        }
    }

    /// A non-blocking TCP connection to `address`, made by `deadline`.
    private static func open(_ address: SocketAddress, deadline: MonotonicInstant) -> Result<Int32, SystemError> {
        let fd = Glibc.socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(SystemError("socket")) }
        // Each packet is written whole and answered before the next: nothing to coalesce.
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let started = address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if started == 0 { return .success(fd) }
        guard errno == EINPROGRESS else {
            let failure = SystemError("connect")
            close(fd)
            return .failure(failure)
        }
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else {
                close(fd)
                return .failure(SystemError("connect", code: ETIMEDOUT))
            }
            var writable = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let remainingMs = Int32(clamping: (deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
            let ready = poll(&writable, 1, remainingMs)
            if ready < 0, errno != EINTR {
                let failure = SystemError("poll")
                close(fd)
                return .failure(failure)
            }
            guard ready > 0 else { continue }
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else {
                close(fd)
                return .failure(SystemError("connect", code: code))
            }
            return .success(fd)
        }
    }
}

/// A failure of the plain client outside errno: `send: not connected`.
struct PlainMQTTError: Error, Sendable, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

private func wipe(_ bytes: inout [UInt8]?) {
    guard bytes != nil else { return }
    wipe(&bytes!)
    bytes = nil
}

private func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
    }
}
