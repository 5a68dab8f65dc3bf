extension GateConfig {
    /// The effective configuration, every default written out, as TOML that
    /// `parse(toml:file:)` reads back to an equal value.
    ///
    /// Meant for `gate config show`: what the program will actually use, so
    /// a default is never a surprise. `source` names where it was read from.
    public func renderedTOML(source: String) -> String {
        var lines = ["# effective configuration from \(Self.commentText(source))"]
        if let udp {
            lines += [
                "",
                "[udp]",
                "host = \(TOMLDocument.quoted(udp.host))",
                "port = \(udp.port)",
                "timeout = \(Self.float(udp.timeout))",
            ]
        }
        if let mqtt {
            lines += [
                "",
                "[mqtt]",
                "# the password is never stored in this file: it comes from $CREDENTIALS_DIRECTORY/mqtt-password or the Secret Service",
                "host = \(TOMLDocument.quoted(mqtt.host))",
                "port = \(mqtt.port)",
                "tls = \(mqtt.tls)",
            ]
            if let caFile = mqtt.caFile { lines.append("ca_file = \(TOMLDocument.quoted(caFile))") }
            if let username = mqtt.username { lines.append("username = \(TOMLDocument.quoted(username))") }
            lines += [
                "client_id_prefix = \(TOMLDocument.quoted(mqtt.clientIDPrefix))",
                "trigger_topic = \(TOMLDocument.quoted(mqtt.triggerTopic))",
                "status_topic = \(TOMLDocument.quoted(mqtt.statusTopic))",
                "timeout = \(Self.float(mqtt.timeout))",
            ]
        }
        lines += esp32Lines
        if let button {
            lines += [
                "",
                "[button]",
                "chip = \(TOMLDocument.quoted(button.chip))",
                "line = \(button.line)",
                "active_low = \(button.activeLow)",
                "debounce_ms = \(button.debounceMilliseconds)",
            ]
        }
        lines += [
            "",
            "[runtime]",
            "reset_delay = \(Self.float(runtime.resetDelay))",
            "cooldown = \(Self.float(runtime.cooldown))",
        ]
        if let homeAssistant {
            lines += [
                "",
                "[homeassistant]",
                "discovery_prefix = \(TOMLDocument.quoted(homeAssistant.discoveryPrefix))",
                "node_id = \(TOMLDocument.quoted(homeAssistant.nodeID))",
                "name = \(TOMLDocument.quoted(homeAssistant.name))",
            ]
        }
        if let notify {
            lines += [
                "",
                "[notify]",
                "every_opening = \(notify.everyOpening)",
                "timeout_ms = \(notify.timeoutMilliseconds)",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `[esp32]`, always written out: which protocol is spoken is never a surprise.
    private var esp32Lines: [String] {
        var lines = ["", "[esp32]"]
        if esp32.protocolVersion == .v2 {
            lines.append(
                "# the key is never stored in this file: it comes from $CREDENTIALS_DIRECTORY/esp32-key or the Secret Service"
            )
        }
        return lines + ["protocol = \(esp32.protocolVersion.rawValue)", "key_id = \(esp32.keyID)"]
    }

    /// Swift prints the shortest text that reads back as the same double
    /// (`2.0`, `0.25`, `1e-05`), and each of those forms is a TOML float;
    /// only the non-finite spellings differ.
    static func float(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        return "\(value)"
    }

    /// `source` inside a comment: a line break in a path must not end the
    /// comment and turn the rest into TOML.
    static func commentText(_ source: String) -> String {
        SafeText.escaped(source, as: .tomlComment)
    }
}
