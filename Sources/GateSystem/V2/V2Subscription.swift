import GateCore

/// What a link subscribes to under `[esp32] protocol = 2` (PROTOCOL-V2.md, "Transports"):
/// the ESP32's signed replies, and the retained epoch announcement for this client's key
/// id. Nil under protocol 1 or without `[mqtt]`.
public struct V2Subscription: Sendable, Equatable {
    /// `<status_topic>/v2`.
    public let replies: String
    /// `<status_topic>/v2/epoch/<key_id>`.
    public let epoch: String
    /// `<trigger_topic>/v2`, where requests go.
    public let requests: String

    public init?(config: GateConfig) {
        guard config.esp32.protocolVersion == .v2, let mqtt = config.mqtt else { return nil }
        let topics = V2Topics(mqtt)
        replies = topics.replies
        epoch = topics.epoch(keyID: config.esp32.keyID)
        requests = topics.requests
    }
}
