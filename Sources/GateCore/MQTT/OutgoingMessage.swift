/// A message for the broker.
public struct OutgoingMessage: Sendable, Equatable, CustomStringConvertible {
    public var topic: String
    public var payload: [UInt8]
    public var retain: Bool

    public init(topic: String, payload: [UInt8], retain: Bool) {
        self.topic = topic
        self.payload = payload
        self.retain = retain
    }

    public init(topic: String, text: String, retain: Bool) {
        self.init(topic: topic, payload: Array(text.utf8), retain: retain)
    }

    public var description: String {
        "\(topic) \(String(decoding: payload, as: UTF8.self))\(retain ? " (retained)" : "")"
    }
}
