extension GateConfig {
    /// The effective configuration, every default written out, as TOML that
    /// `parse(toml:file:)` reads back to an equal value.
    ///
    /// Meant for `gate config show`: what the program will actually use, so
    /// a default is never a surprise. `source` names where it was read from.
    public func renderedTOML(source: String) -> String {
        var lines = ["# effective configuration from \(Self.commentText(source))"]
        for (table, settings) in tableSettings {
            guard let settings else { continue }
            lines += ["", "[\(table.rawValue)]"] + secretComment(table)
            lines += settings.compactMap { key, value in value.map { "\(key) = \(Self.rendered($0))" } }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Where a table's secret comes from instead, since the file never holds it: the MQTT
    /// password always; the ESP32's key when protocol v2 needs one.
    private func secretComment(_ table: ConfigTable) -> [String] {
        switch table {
        case .mqtt:
            [
                "# the password is never stored in this file: it comes from $CREDENTIALS_DIRECTORY/mqtt-password or the Secret Service"
            ]
        case .esp32 where esp32.protocolVersion == .v2:
            [
                "# the key is never stored in this file: it comes from $CREDENTIALS_DIRECTORY/esp32-key or the Secret Service"
            ]
        default:
            []
        }
    }

    static func rendered(_ value: TOMLValue) -> String {
        switch value {
        case .string(let text): TOMLDocument.quoted(text)
        case .integer(let number): "\(number)"
        case .float(let number): float(number)
        case .boolean(let flag): "\(flag)"
        }
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
