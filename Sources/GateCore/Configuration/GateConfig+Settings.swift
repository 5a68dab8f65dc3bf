extension GateConfig {
    /// A table's keys in the order of docs/CONTRACT.md#configuration, each with its value,
    /// defaults included; nil for an optional key that is not set (`mqtt.ca_file`).
    typealias TableSettings = [(key: String, value: TOMLValue?)]

    /// Every table in the file's order, nil for one this configuration does not have.
    /// `gate config show` writes these and a reload compares them, so that a key is
    /// never in one and missing from the other.
    var tableSettings: [(table: ConfigTable, settings: TableSettings?)] {
        [
            (.udp, udp.map(Self.settings)),
            (.mqtt, mqtt.map(Self.settings)),
            (
                .esp32,
                [
                    ("protocol", .integer(Int64(esp32.protocolVersion.rawValue))),
                    ("key_id", .integer(Int64(esp32.keyID))),
                ]
            ),
            (.button, button.map(Self.settings)),
            (.runtime, [("reset_delay", .float(runtime.resetDelay)), ("cooldown", .float(runtime.cooldown))]),
            (.homeassistant, homeAssistant.map(Self.settings)),
            (
                .notify,
                notify.map { notify in
                    [
                        ("every_opening", .boolean(notify.everyOpening)),
                        ("timeout_ms", .integer(Int64(notify.timeoutMilliseconds))),
                    ]
                }
            ),
        ]
    }

    private static func settings(_ udp: UDPConfig) -> TableSettings {
        [("host", .string(udp.host)), ("port", .integer(Int64(udp.port))), ("timeout", .float(udp.timeout))]
    }

    private static func settings(_ mqtt: MQTTConfig) -> TableSettings {
        [
            ("host", .string(mqtt.host)),
            ("port", .integer(Int64(mqtt.port))),
            ("tls", .boolean(mqtt.tls)),
            ("ca_file", mqtt.caFile.map(TOMLValue.string)),
            ("username", mqtt.username.map(TOMLValue.string)),
            ("client_id_prefix", .string(mqtt.clientIDPrefix)),
            ("trigger_topic", .string(mqtt.triggerTopic)),
            ("status_topic", .string(mqtt.statusTopic)),
            ("timeout", .float(mqtt.timeout)),
        ]
    }

    private static func settings(_ button: ButtonConfig) -> TableSettings {
        [
            ("chip", .string(button.chip)),
            ("line", .integer(Int64(button.line))),
            ("active_low", .boolean(button.activeLow)),
            ("debounce_ms", .integer(Int64(button.debounceMilliseconds))),
        ]
    }

    private static func settings(_ homeAssistant: HomeAssistantConfig) -> TableSettings {
        [
            ("discovery_prefix", .string(homeAssistant.discoveryPrefix)),
            ("node_id", .string(homeAssistant.nodeID)),
            ("name", .string(homeAssistant.name)),
        ]
    }
}
