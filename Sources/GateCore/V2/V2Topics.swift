/// Protocol v2's MQTT topics, made from `[mqtt]`'s (PROTOCOL-V2.md, "Transports"): the v2
/// topics sit under the v1 ones, so that a v1 firmware never sees a v2 request.
public struct V2Topics: Sendable, Equatable {
    /// `<trigger_topic>/v2`: opens and status queries, as 64 lowercase hex digits.
    public var requests: String
    /// `<status_topic>/v2`: the ESP32's signed replies.
    public var replies: String
    /// `<status_topic>/v2/epoch/`: followed by a key id, the retained epoch announcement.
    public var epochPrefix: String

    public init(triggerTopic: String, statusTopic: String) {
        requests = triggerTopic + "/v2"
        replies = statusTopic + "/v2"
        epochPrefix = statusTopic + "/v2/epoch/"
    }

    public init(_ mqtt: MQTTConfig) {
        self.init(triggerTopic: mqtt.triggerTopic, statusTopic: mqtt.statusTopic)
    }

    /// `<status_topic>/v2/epoch/<key_id>` (decimal): where the ESP32 keeps, retained, a
    /// `0x92` signed with that key.
    public func epoch(keyID: UInt8) -> String {
        epochPrefix + String(keyID)
    }

    /// The key id of an epoch announcement's topic, or nil for any other topic. Only the
    /// decimal form the ESP32 writes (no sign, no leading zero, 1–255).
    public func keyID(ofEpochTopic topic: String) -> UInt8? {
        guard topic.hasPrefix(epochPrefix) else { return nil }
        let digits = topic.utf8.dropFirst(epochPrefix.utf8.count)
        guard (1...3).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.first != 0x30
        else { return nil }
        return UInt8(String(decoding: digits, as: UTF8.self))
    }
}
