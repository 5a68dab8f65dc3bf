import GateCore
import Mosquitto

/// What an `MQTTExchange` hears from its client, on the exchange's own thread.
enum MQTTSessionEvent: Sendable, Hashable {
    /// CONNACK arrived; 0 is success, anything else the broker's refusal.
    case connected(code: Int32)
    /// The connection ended with this code (libmosquitto's; 0 when asked for).
    case disconnected(code: Int32)
    /// SUBACK arrived; a granted QoS of 0x80 means the broker refused the topic.
    case subscribed(messageID: Int32, grantedQoS: [Int32])
    case message(topic: String, payload: [UInt8], retained: Bool)
    /// A warning or error the client only logged (libmosquitto's TLS failures).
    case problem(text: String, fatalWhileConnecting: Bool)
    case trace(text: String)
}

/// The MQTT client one exchange drives from its own thread: libmosquitto for TLS,
/// `PlainMQTTClient` for plain TCP (see there why). Events reach the handler given
/// at creation, only from inside `connect` or `loopOnce`.
protocol MQTTSession: AnyObject, Sendable {
    var clientID: String { get }
    /// The connection's socket (-1 when not connected), to wait on beside other
    /// descriptors before calling `loopOnce`.
    var socket: Int32 { get }
    /// Connects and sends CONNECT; the CONNACK arrives later as `.connected`.
    func connect(host: String, port: Int, keepAlive: UInt16, deadline: MonotonicInstant) throws -> Void
    /// Waits up to `timeoutMs` for the socket, then reads and handles what came.
    /// Returns why the connection is gone, or nil while it lasts.
    func loopOnce(timeoutMs: Int32) -> String?
    /// Returns the SUBSCRIBE's packet identifier.
    func subscribe(topic: String) throws -> Int32
    /// Publishes at QoS 0, not retained.
    func publish(topic: String, payload: [UInt8]) throws -> Void
    func disconnect()
    /// The client's words for a CONNACK return code.
    func connackWords(for code: Int32) -> String
}

extension MQTTExchange {
    /// libmosquitto for TLS; for plain TCP the client of our own, which spares the
    /// opening the loading of libmosquitto, libssl and libcrypto (`PlainMQTTClient`).
    static func makeSession(
        config: MQTTConfig, password: Secret?, handler: @escaping @Sendable (MQTTSessionEvent) -> Void
    ) throws -> any MQTTSession {
        let clientID = MQTTAdapter.clientID(prefix: config.clientIDPrefix)
        guard config.tls else {
            return PlainMQTTClient(clientID: clientID, username: config.username, password: password, handler: handler)
        }
        return try MosquittoSession(clientID: clientID, username: config.username, password: password, tls: .init(caFile: config.caFile), handler: handler)
    }
}

/// libmosquitto behind `MQTTSession`: what a TLS broker gets.
final class MosquittoSession: MQTTSession {
    let client: MosquittoClient

    init(
        clientID: String, username: String?, password: Secret?, tls: MosquittoClient.TLS,
        handler: @escaping @Sendable (MQTTSessionEvent) -> Void
    ) throws {
        client = try MosquittoClient(clientID: clientID) { event in
            switch event {
            case .connected(let code): handler(.connected(code: code))
            case .disconnected(let code): handler(.disconnected(code: code))
            case .subscribed(let id, let granted): handler(.subscribed(messageID: id, grantedQoS: granted))
            case .message(let topic, let payload, let retained): handler(.message(topic: topic, payload: payload, retained: retained))
            case .published: break
            case .log(let level, let text):
                handler(.trace(text: text))
                if level == MosquittoLogLevel.error || level == MosquittoLogLevel.warning {
                    // A TLS handshake that fails inside the network loop is only logged:
                    // no disconnect callback follows, and the loop would retry until the
                    // budget ends.
                    handler(.problem(text: text, fatalWhileConnecting: level == MosquittoLogLevel.error))
                }
            }
        }
        if let username {
            if let password {
                try password.withBytes { try client.setCredentials(username: username, password: $0) }
            } else {
                try client.setCredentials(username: username, password: nil)
            }
        }
        try client.enableTLS(tls)
    }

    var clientID: String { client.clientID }
    var socket: Int32 { client.socket }

    func connect(host: String, port: Int, keepAlive: UInt16, deadline: MonotonicInstant) throws {
        // libmosquitto's connect blocks on its own terms (see MosquittoClient.connect).
        try client.connect(host: host, port: Int32(port), keepAlive: Int32(keepAlive))
    }

    func loopOnce(timeoutMs: Int32) -> String? {
        let code = client.loopOnce(timeoutMs: timeoutMs)
        return code == MosquittoError.success ? nil : MosquittoError.words(for: code)
    }

    func subscribe(topic: String) throws -> Int32 {
        try client.subscribe(topic: topic, qos: 0)
    }

    func publish(topic: String, payload: [UInt8]) throws {
        _ = try client.publish(topic: topic, payload: payload, qos: 0, retain: false)
    }

    func disconnect() {
        client.disconnect()
    }

    func connackWords(for code: Int32) -> String {
        MosquittoError.connackWords(for: code)
    }
}
