/// What the library reports from its network thread.
public enum MosquittoEvent: Sendable, Hashable {
    /// CONNACK arrived; `code` 0 is success, anything else is the broker's refusal.
    case connected(code: Int32)
    /// The connection ended; `code` 0 means this client asked for it.
    case disconnected(code: Int32)
    /// SUBACK arrived; a granted QoS of 0x80 means the broker refused the topic.
    case subscribed(messageID: Int32, grantedQoS: [Int32])
    case message(topic: String, payload: [UInt8], retained: Bool)
    case published(messageID: Int32)
    /// A log line of the library (its TLS errors only appear here).
    case log(level: Int32, text: String)
}
