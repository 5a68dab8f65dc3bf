/// Why an `MQTTOneShot` session failed: what a caller decides on (`kind`), and the
/// library's or the broker's own words.
public struct MQTTSessionFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The client could not even be prepared (a CA file it refuses, no thread).
        case setup
        case connect
        /// The TLS handshake failed.
        case tls
        /// A CONNACK with a refusal.
        case refused(code: Int32)
        /// The broker closed the connection before any CONNACK.
        case closed
        /// The connection ended, or a message could not be sent, after the CONNACK.
        case lost
        case noConnack(within: Duration)
        case unacknowledged(within: Duration)
    }

    public let kind: Kind
    public let detail: String
    let broker: String

    init(_ kind: Kind, _ detail: String, _ broker: String) {
        self.kind = kind
        self.detail = detail
        self.broker = broker
    }

    public var description: String {
        switch kind {
        case .setup: "cannot set up the MQTT client for \(broker): \(detail)"
        case .connect, .tls: "cannot reach the MQTT broker at \(broker): \(detail)"
        case .refused: "the MQTT broker at \(broker) refused the login: \(detail)"
        case .closed: "the MQTT broker at \(broker) closed the connection before its CONNACK: \(detail)"
        case .lost: "lost the connection to the MQTT broker at \(broker): \(detail)"
        case .noConnack(let budget): "no CONNACK from the MQTT broker at \(broker) within \(budget)"
        case .unacknowledged(let budget):
            "the MQTT broker at \(broker) did not acknowledge everything within \(budget)"
        }
    }
}
