/// The commented starter file that `gate config init` writes: every key, its
/// default and what it means, with only what the command line gave switched on.
public enum StarterConfig {
    /// What [udp] host is when `--udp` is not given: a documentation address (RFC 5737)
    /// that is on no real network, so that an unedited file never sends a trigger to
    /// some other device of the LAN (`gate doctor` says to change it).
    public static let placeholderHost = "192.0.2.50"

    /// The file's text. With `mqttHost` and no `udpHost`, [udp] is commented out
    /// (MQTT only); otherwise [udp] is live, and [mqtt] only with `mqttHost`.
    public static func text(udpHost: String?, mqttHost: String?) -> String {
        let udpLive = udpHost != nil || mqttHost == nil
        return (header + udp(udpHost, live: udpLive) + mqtt(mqttHost) + rest).joined(separator: "\n") + "\n"
    }

    static let header = [
        "# gate's configuration (man 5 gate.toml), written by `gate config init`.",
        "#",
        "# `gate config check` validates it; `gate doctor` checks that the ESP32 (and the",
        "# broker, with [mqtt]) can be reached, without opening the gate.",
        "# The first file found wins: --config, $GATE_CONFIG,",
        "# ~/.config/gate/gate.toml ($XDG_CONFIG_HOME), /etc/gate/gate.toml.",
        "# Unknown keys are errors; a line starting with # is a comment, and a commented",
        "# key keeps its default (shown). `gate daemon` rereads this file when it changes.",
    ]

    static func udp(_ host: String?, live: Bool) -> [String] {
        let mark = live ? "" : "#"
        var lines = [
            "", "# The ESP32 relay. UDP is tried first, and only when the address is on a",
            "# directly connected network.",
        ]
        if !live { lines.append("# To use it, uncomment [udp] and its host first, then any key below them.") }
        lines.append("\(mark)[udp]")
        if let host {
            lines += [
                "# The ESP32's IPv4 or IPv6 address, or its host name.", "\(mark)host = \(TOMLDocument.quoted(host))",
            ]
        } else {
            lines += [
                "# Change this to the ESP32's IPv4 or IPv6 address, or its host name:",
                "# \(placeholderHost) is a documentation address that is on no real network.",
                "\(mark)host = \(TOMLDocument.quoted(placeholderHost))",
            ]
        }
        return lines + [
            "# The ESP32's UDP port (1-65535).",
            "#port = \(UDPConfig.defaultPort)",
            "# Seconds for the complete relay cycle (on, then off) over UDP; more than 0.",
            "#timeout = \(UDPConfig.defaultTimeout)",
        ]
    }

    static func mqtt(_ host: String?) -> [String] {
        let mark = host == nil ? "#" : ""
        var lines = ["", "# The MQTT broker: the fallback when UDP is skipped or gets no answer at all."]
        if host == nil {
            lines += [
                "# To use it, uncomment [mqtt] and its host first, then any key below them",
                "# (`gate config init --mqtt HOST` does the first part).",
            ]
        }
        return lines + [
            "\(mark)[mqtt]",
            "\(mark)host = \(TOMLDocument.quoted(host ?? "broker.lan"))",
            "# 1883 without TLS, 8883 with TLS (those are the defaults).",
            "#port = \(MQTTConfig.defaultPlainPort)",
            "# TLS to the broker.",
            "#tls = false",
            "# With tls = true: the broker's CA bundle (the system's store otherwise).",
            "#ca_file = \"/etc/ssl/certs/ca-certificates.crt\"",
            "# Broker user name. Its password is never in this file: `gate secret set",
            "# mqtt-password`, or for the service the credential mqtt-password.",
            "#username = \"gate\"",
            "# Where the trigger is published, and where the ESP32 reports 1 and 0. No wildcards.",
            "#trigger_topic = \(TOMLDocument.quoted(MQTTConfig.defaultTriggerTopic))",
            "#status_topic = \(TOMLDocument.quoted(MQTTConfig.defaultStatusTopic))",
            "# Seconds for the complete cycle over MQTT, connecting included; more than 0.",
            "#timeout = \(MQTTConfig.defaultTimeout)",
        ]
    }

    static let rest = [
        "",
        "# The ESP32's protocol: 1, the plain trigger that anyone on the network can send, or",
        "# 2, signed frames (the reference firmware with a key). Under 2 the key never lives",
        "# here: `gate key new` stores it (credential esp32-key) and prints it for the firmware.",
        "#[esp32]",
        "#protocol = 1",
        "#key_id = 1",
        "",
        "# Only `gate daemon` reads [button]: a push button on a GPIO line. `gpiodetect` lists",
        "# the chips; the line is the GPIO number, not the header pin (GPIO 17 is pin 11).",
        "#[button]",
        "#chip = \"gpiochip0\"",
        "#line = 17",
        "#active_low = true",
        "#debounce_ms = 50",
        "",
        "# Seconds in timeout or error before the state is ready again, and after a cycle",
        "# before the next opening is accepted (`gate open --force` skips the cooldown).",
        "#[runtime]",
        "#reset_delay = \(RuntimeConfig.defaultResetDelay)",
        "#cooldown = \(RuntimeConfig.defaultCooldown)",
        "",
        "# [homeassistant] (the gate as a Home Assistant device, with [mqtt]) and [notify]",
        "# (desktop notifications): see man 5 gate.toml.",
    ]
}
