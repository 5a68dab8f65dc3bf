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

/// HA's MQTT discovery messages for the gate: a button "Open", a binary_sensor
/// "Relay" from the ESP32's own status topic, a sensor "Last opening" (docs/CONTRACT.md#home-assistant).
public struct HomeAssistantDiscovery: Sendable {
    public static let online = "online"
    public static let offline = "offline"
    /// What HA's button publishes on a press, and the only command payload the daemon takes.
    public static let press = "PRESS"
    /// The sensor's states: the status file's outcomes plus `refused`.
    public static let outcomes = ["success", "timeout", "error", "interrupted", "refused"]

    public let config: HomeAssistantConfig
    public let topics: HomeAssistantTopics
    public let statusTopic: String
    public let version: String

    public init(config: HomeAssistantConfig, mqtt: MQTTConfig, version: String) {
        self.config = config
        self.topics = HomeAssistantTopics(config)
        self.statusTopic = mqtt.statusTopic
        self.version = version
    }

    var device: JSONValue {
        .object([
            ("identifiers", .array([.string("gate_\(config.nodeID)")])),
            ("name", .string(config.name)),
            ("manufacturer", .string("gate")),
            ("model", .string("ESP32 relay (UDP, MQTT)")),
            ("sw_version", .string(version)),
        ])
    }

    var origin: JSONValue {
        .object([
            ("name", .string("gate")),
            ("sw_version", .string(version)),
        ])
    }

    /// Members every entity shares: availability, device, origin.
    private func entity(_ name: String, id: String, _ members: [(String, JSONValue)]) -> JSONValue {
        .object(
            [
                ("name", .string(name)),
                ("unique_id", .string("\(config.nodeID)_\(id)")),
                ("object_id", .string("\(config.nodeID)_\(id)")),
            ] + members + [
                ("availability_topic", .string(topics.availability)),
                ("payload_available", .string(Self.online)),
                ("payload_not_available", .string(Self.offline)),
                ("device", device),
                ("origin", origin),
            ]
        )
    }

    public var button: JSONValue {
        entity(
            "Open",
            id: "open",
            [
                ("command_topic", .string(topics.command)),
                ("payload_press", .string(Self.press)),
                ("retain", .bool(false)),
                ("qos", .int(0)),
                ("icon", .string("mdi:gate-open")),
            ]
        )
    }

    public var relay: JSONValue {
        entity(
            "Relay",
            id: "relay",
            [
                ("state_topic", .string(statusTopic)),
                ("payload_on", .string("1")),
                ("payload_off", .string("0")),
                ("icon", .string("mdi:electric-switch")),
            ]
        )
    }

    public var lastOpening: JSONValue {
        entity(
            "Last opening",
            id: "last_opening",
            [
                ("state_topic", .string(topics.lastOpening)),
                ("json_attributes_topic", .string(topics.lastOpeningAttributes)),
                ("device_class", .string("enum")),
                ("options", .array(Self.outcomes.map { .string($0) })),
                ("icon", .string("mdi:history")),
            ]
        )
    }

    /// The three retained config messages.
    public var configMessages: [OutgoingMessage] {
        [
            OutgoingMessage(topic: topics.buttonConfig, text: button.serialized(), retain: true),
            OutgoingMessage(topic: topics.relayConfig, text: relay.serialized(), retain: true),
            OutgoingMessage(topic: topics.lastOpeningConfig, text: lastOpening.serialized(), retain: true),
        ]
    }

    /// The last will, set before the link connects.
    public var will: OutgoingMessage { OutgoingMessage(topic: topics.availability, text: Self.offline, retain: true) }
    public var birth: OutgoingMessage { OutgoingMessage(topic: topics.availability, text: Self.online, retain: true) }

    /// Empty retained messages on every retained topic: HA deletes the device.
    public static func removal(_ topics: HomeAssistantTopics) -> [OutgoingMessage] {
        topics.retainedTopics.map { OutgoingMessage(topic: $0, payload: [], retain: true) }
    }

    /// The sensor's state and attributes, attributes first (HA shows them with the state).
    public func lastOpeningMessages(_ state: LastOpeningState) -> [OutgoingMessage] {
        [
            OutgoingMessage(topic: topics.lastOpeningAttributes, text: state.attributes.serialized(), retain: true),
            OutgoingMessage(topic: topics.lastOpening, text: state.outcome, retain: true),
        ]
    }
}

/// What the "Last opening" sensor shows.
public struct LastOpeningState: Sendable, Equatable {
    /// One of `HomeAssistantDiscovery.outcomes`.
    public var outcome: String
    public var adapter: String?
    public var durationMs: Int64?
    public var source: String
    public var finishedAt: String
    public var error: String?

    public init(
        outcome: String,
        adapter: String?,
        durationMs: Int64?,
        source: String,
        finishedAt: String,
        error: String?
    ) {
        self.outcome = outcome
        self.adapter = adapter
        self.durationMs = durationMs
        self.source = source
        self.finishedAt = finishedAt
        self.error = error
    }

    /// The status file's last opening.
    public init(_ last: StatusRecord.Last) {
        self.init(
            outcome: last.outcome.rawValue,
            adapter: last.adapter,
            durationMs: last.durationMs,
            source: last.source,
            finishedAt: last.finishedAt,
            error: last.error
        )
    }

    /// A command refused before anything was sent.
    public static func refused(source: String, at: String, error: String?) -> LastOpeningState {
        LastOpeningState(outcome: "refused", adapter: nil, durationMs: 0, source: source, finishedAt: at, error: error)
    }

    public var attributes: JSONValue {
        .object([
            ("adapter", .string(adapter)),
            ("duration_ms", durationMs.map { .int($0) } ?? .null),
            ("source", .string(source)),
            ("finished_at", .string(finishedAt)),
            ("error", .string(error)),
        ])
    }
}
