/// The topics of the gate as a Home Assistant device (docs/CONTRACT.md#home-assistant). Discovery configs
/// live under HA's prefix; the device's own topics under `gate/<node_id>/`.
public struct HomeAssistantTopics: Sendable, Equatable {
    public let config: HomeAssistantConfig

    public init(_ config: HomeAssistantConfig) {
        self.config = config
    }

    var base: String { "gate/\(config.nodeID)" }
    /// Where HA's button publishes a press; the daemon subscribes to it.
    public var command: String { "\(base)/open" }
    /// `online` / `offline` (the daemon's last will), retained.
    public var availability: String { "\(base)/availability" }
    /// The last opening's outcome, retained.
    public var lastOpening: String { "\(base)/last_opening" }
    /// Its attributes (JSON), retained.
    public var lastOpeningAttributes: String { "\(base)/last_opening/attributes" }
    /// HA's birth and last will (`online` / `offline`).
    public var homeAssistantStatus: String { "\(config.discoveryPrefix)/status" }

    public var buttonConfig: String { "\(config.discoveryPrefix)/button/\(config.nodeID)/open/config" }
    public var relayConfig: String { "\(config.discoveryPrefix)/binary_sensor/\(config.nodeID)/relay/config" }
    public var lastOpeningConfig: String { "\(config.discoveryPrefix)/sensor/\(config.nodeID)/last_opening/config" }

    /// The three discovery config topics, in the order they are published.
    public var discoveryConfigs: [String] { [buttonConfig, relayConfig, lastOpeningConfig] }

    /// Every retained topic the device leaves on the broker: what removal clears.
    public var retainedTopics: [String] { discoveryConfigs + [lastOpening, lastOpeningAttributes, availability] }

    /// One topic the device publishes or subscribes to, what it is for, and the
    /// `[homeassistant]` key it is made from (for the words of a collision).
    public struct Use: Sendable, Equatable {
        public var topic: String
        public var role: String
        public var key: String
    }

    /// Every topic the daemon publishes or subscribes to as the device: none may be
    /// one of the ESP32's (docs/CONTRACT.md#validation).
    public var uses: [Use] {
        [
            Use(
                topic: command,
                role: "Home Assistant's command topic (its button publishes PRESS there)",
                key: "node_id"
            ),
            Use(topic: availability, role: "the device's availability topic", key: "node_id"),
            Use(topic: lastOpening, role: "the \"Last opening\" sensor's state topic", key: "node_id"),
            Use(topic: lastOpeningAttributes, role: "the \"Last opening\" sensor's attributes topic", key: "node_id"),
            Use(topic: homeAssistantStatus, role: "Home Assistant's own status topic", key: "discovery_prefix"),
        ] + discoveryConfigs.map { Use(topic: $0, role: "a discovery config topic", key: "discovery_prefix") }
    }

    /// The topics of `uses`.
    public var all: [String] { uses.map(\.topic) }
}
