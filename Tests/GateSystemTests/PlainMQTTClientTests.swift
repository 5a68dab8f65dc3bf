import Foundation
import GateCore
import Mosquitto
import Synchronization
import Testing
@testable import GateSystem

/// A TCP socket bound to a free port of 127.0.0.1, listening or not (a port bound
/// and not listening refuses connections, and stays reserved while the socket lives).
private func loopbackTCPSocket(listening: Bool) throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && (!listening || listen(fd, 1) == 0) && getsockname(fd, $0, &length) == 0
        }
    }
    guard fd >= 0, ok else {
        let failure = SystemError("bind")
        close(fd)
        throw failure
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// A one-connection TCP server on 127.0.0.1 that reads what the client sends and
/// answers with a script: for what a real broker would not do.
private final class ScriptedServer: Sendable {
    let port: UInt16
    private let listener: Int32
    let received = Mutex<[UInt8]>([])

    /// `replies`: sent one by one, 20 ms apart, once the client's first bytes arrived;
    /// then the connection is closed at once when `closeAfter`, or else when the client
    /// closes its side.
    init(replies: [[UInt8]], closeAfter: Bool) throws {
        (listener, port) = try loopbackTCPSocket(listening: true)
        let thread = Thread { [self] in serve(replies: replies, closeAfter: closeAfter) }
        thread.start()
    }

    private func serve(replies: [[UInt8]], closeAfter: Bool) {
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
        if count > 0 { received.withLock { $0 += buffer[0..<count] } }
        for reply in replies {
            usleep(20_000)
            _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        if closeAfter {
            close(connection)
        } else {
            // Held open until the client goes: recv returns 0 then.
            while buffer.withUnsafeMutableBytes({ recv(connection, $0.baseAddress, $0.count, 0) }) > 0 {}
            close(connection)
        }
    }

    deinit {
        close(listener)
    }
}

private final class EventLog: Sendable {
    let events = Mutex<[MQTTSessionEvent]>([])

    func record(_ event: MQTTSessionEvent) {
        events.withLock { $0.append(event) }
    }
}

/// Runs the client's loop until it reports the connection gone or `limit` passes.
private func loopUntilLost(_ client: PlainMQTTClient, limit: Duration = .seconds(5)) -> String? {
    let end = ContinuousClock.now + limit
    while ContinuousClock.now < end {
        if let lost = client.loopOnce(timeoutMs: 20) { return lost }
    }
    return nil
}

@Suite("The plain-TCP MQTT client against scripted servers")
struct PlainMQTTClientTests {
    private let deadline = MonotonicClock.now() + .seconds(5)

    @Test("CONNACK codes read as libmosquitto words them, so a refusal reads the same over TLS and plain TCP")
    func connackWordsMatchLibmosquitto() {
        for code: Int32 in [0, 1, 2, 3, 4, 5, 6, 99] {
            #expect(MQTTPacket.connackWords(for: code) == MosquittoError.connackWords(for: code), "code \(code)")
        }
    }

    @Test("Sends CONNECT with the password, which it then forgets; a refusal and a close: the CONNACK is handled before the loss")
    func refusedThenClosed() throws {
        let server = try ScriptedServer(replies: [[0x20, 0x02, 0x00, 0x05]], closeAfter: true)
        let log = EventLog()
        let client = PlainMQTTClient(clientID: "gate-00000001", username: "gate", password: Secret(bytes: Array("pw-Xy7".utf8))) { log.record($0) }
        try client.connect(host: "127.0.0.1", port: Int(server.port), keepAlive: 60, deadline: deadline)
        let lost = loopUntilLost(client)
        #expect(lost == "the broker closed the connection")
        #expect(log.events.withLock { $0 } == [.connected(code: 5)])
        let sent = server.received.withLock { $0 }
        let expected = try MQTTPacket.connect(clientID: "gate-00000001", keepAlive: 60, username: "gate", password: Array("pw-Xy7".utf8))
        #expect(sent == expected)
    }

    @Test("A packet split across TCP segments is read whole; then garbage ends the connection with the packet named")
    func splitThenGarbage() throws {
        let server = try ScriptedServer(replies: [[0x20], [0x02, 0x00], [0x00], [0x20, 0x05, 0, 0, 0, 0, 0]], closeAfter: false)
        let log = EventLog()
        let client = PlainMQTTClient(clientID: "c", username: nil, password: nil) { log.record($0) }
        try client.connect(host: "127.0.0.1", port: Int(server.port), keepAlive: 60, deadline: deadline)
        let lost = loopUntilLost(client)
        #expect(lost == "the broker sent a CONNACK of 5 bytes instead of 2, which is not MQTT 3.1.1")
        #expect(log.events.withLock { $0 } == [.connected(code: 0)])
        client.disconnect()
        #expect(client.socket == -1)
    }

    @Test("Subscribe then publish: the exact packets on the wire, packet ids counted from 1")
    func subscribeAndPublish() throws {
        let server = try ScriptedServer(replies: [[0x20, 0x02, 0x00, 0x00], [0x90, 0x03, 0x00, 0x01, 0x00], [0x30, 0x04, 0x00, 0x01, 0x73, 0x31]], closeAfter: false)
        let log = EventLog()
        let client = PlainMQTTClient(clientID: "c", username: nil, password: nil) { log.record($0) }
        try client.connect(host: "127.0.0.1", port: Int(server.port), keepAlive: 60, deadline: deadline)
        let end = ContinuousClock.now + .seconds(5)
        while log.events.withLock({ $0.count }) < 3, ContinuousClock.now < end {
            #expect(client.loopOnce(timeoutMs: 20) == nil)
        }
        #expect(log.events.withLock { $0 } == [
            .connected(code: 0), .subscribed(messageID: 1, grantedQoS: [0]), .message(topic: "s", payload: [0x31], retained: false),
        ])
        #expect(try client.subscribe(topic: "s") == 1)
        #expect(try client.subscribe(topic: "s") == 2)
        try client.publish(topic: "t", payload: Array("1700000000".utf8))
    }

    @Test("Nothing listens: connect throws the system's words, naming the call")
    func refused() throws {
        let (fd, port) = try loopbackTCPSocket(listening: false)
        defer { close(fd) }
        let client = PlainMQTTClient(clientID: "c", username: nil, password: nil) { _ in }
        #expect(throws: SystemError("connect", code: ECONNREFUSED)) {
            try client.connect(host: "127.0.0.1", port: Int(port), keepAlive: 60, deadline: deadline)
        }
        #expect(client.socket == -1)
    }
}
