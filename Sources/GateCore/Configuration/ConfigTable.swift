/// The tables of docs/CONTRACT.md#configuration and the keys each allows.
enum ConfigTable: String, CaseIterable {
    case udp, mqtt, esp32, button, runtime, homeassistant, notify

    var keys: [String] {
        switch self {
        case .udp: ["host", "port", "timeout"]
        case .mqtt:
            [
                "host", "port", "tls", "ca_file", "username", "client_id_prefix", "trigger_topic", "status_topic",
                "timeout",
            ]
        case .esp32: ["protocol", "key_id"]
        case .button: ["chip", "line", "active_low", "debounce_ms"]
        case .runtime: ["reset_delay", "cooldown"]
        case .homeassistant: ["discovery_prefix", "node_id", "name"]
        case .notify: ["every_opening", "timeout_ms"]
        }
    }

    static let list = "[udp], [mqtt], [esp32], [button], [runtime], [homeassistant] or [notify]"
}
