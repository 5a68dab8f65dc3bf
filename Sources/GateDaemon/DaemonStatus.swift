import GateCore

/// The one-line `STATUS=` systemd shows under `systemctl status gate`.
enum DaemonStatus {
    static func text(for config: GateConfig, button: String?) -> String {
        var parts: [String] = [button.map { "button on \($0)" } ?? "no button"]
        if let udp = config.udp { parts.append("UDP \(udp.host):\(udp.port)") }
        if let mqtt = config.mqtt { parts.append("MQTT \(mqtt.host):\(mqtt.port)") }
        return "ready: " + parts.joined(separator: ", ")
    }
}
