import GateCore

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

    var origin: JSONValue { .object([("name", .string("gate")), ("sw_version", .string(version))]) }

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
