extension ConfigValidator {
    mutating func udpConfig() -> UDPConfig? {
        guard tableLines[.udp] != nil else { return nil }
        let host = host(in: .udp, what: "the ESP32")
        let port = integer(.udp, "port", in: 1...65535)
        let timeout = seconds(.udp, "timeout", allowsZero: false, maximum: UDPConfig.maximumTimeout)
        guard let host else { return nil }
        return UDPConfig(
            host: host,
            port: port.or(UDPConfig.defaultPort),
            timeout: timeout.or(UDPConfig.defaultTimeout)
        )
    }

    mutating func mqttConfig() -> MQTTConfig? {
        guard tableLines[.mqtt] != nil else { return nil }
        let host = host(in: .mqtt, what: "the MQTT broker")
        let port = integer(.mqtt, "port", in: 1...65535)
        let tls = boolean(.mqtt, "tls")
        let caFile = caFile(tls: tls)
        let username = username()
        let prefix = clientIDPrefix()
        let trigger = topic("trigger_topic")
        let status = topic("status_topic")
        checkTopicsDiffer(trigger: trigger, status: status)
        let timeout = seconds(.mqtt, "timeout", allowsZero: false, maximum: MQTTConfig.maximumTimeout)
        guard let host else { return nil }
        return MQTTConfig(
            host: host,
            port: port.value,
            tls: tls.or(false),
            caFile: caFile,
            username: username,
            clientIDPrefix: prefix.or(MQTTConfig.defaultClientIDPrefix),
            triggerTopic: trigger.or(MQTTConfig.defaultTriggerTopic),
            statusTopic: status.or(MQTTConfig.defaultStatusTopic),
            timeout: timeout.or(MQTTConfig.defaultTimeout)
        )
    }

    mutating func buttonConfig() -> ButtonConfig? {
        guard let tableLine = tableLines[.button] else { return nil }
        let chip = checkedString(.button, "chip") { name in
            if name.isEmpty {
                return "must not be empty; give a chip name such as \"gpiochip0\", a number, a path or a label"
            }
            return name.utf8.contains(0) ? "must not contain a NUL character" : nil
        }
        let line = integer(.button, "line", in: 0...1023)
        if case .absent = line {
            report("button.line", line: tableLine, "a GPIO line number (0–1023) is required in [button]")
        }
        let activeLow = boolean(.button, "active_low")
        let debounce = integer(.button, "debounce_ms", in: 0...1000, unit: " milliseconds")
        guard let lineNumber = line.value else { return nil }
        return ButtonConfig(
            chip: chip.or(ButtonConfig.defaultChip),
            line: lineNumber,
            activeLow: activeLow.or(true),
            debounceMilliseconds: debounce.or(ButtonConfig.defaultDebounceMilliseconds)
        )
    }

    mutating func runtimeConfig() -> RuntimeConfig {
        RuntimeConfig(
            resetDelay: seconds(.runtime, "reset_delay", allowsZero: true, maximum: 3600).or(
                RuntimeConfig.defaultResetDelay
            ),
            cooldown: seconds(.runtime, "cooldown", allowsZero: true, maximum: 3600).or(RuntimeConfig.defaultCooldown)
        )
    }

    /// `[homeassistant]` (docs/CONTRACT.md#home-assistant): only beside `[mqtt]`, whose link carries it.
    mutating func homeAssistantConfig() -> HomeAssistantConfig? {
        guard let tableLine = tableLines[.homeassistant] else { return nil }
        let hasMQTT = tableLines[.mqtt] != nil
        if !hasMQTT {
            report(
                "homeassistant",
                line: tableLine,
                "[homeassistant] needs [mqtt]: Home Assistant is reached through the MQTT broker"
            )
        }
        let prefix = checkedString(.homeassistant, "discovery_prefix") { text in
            if text.isEmpty { return "must not be empty; Home Assistant's default is \"homeassistant\"" }
            if text.unicodeScalars.contains(where: Self.isControl) { return "must not contain control characters" }
            if text.contains("+") || text.contains("#") { return "must not contain wildcards (`+` or `#`)" }
            if text.hasPrefix("/") || text.hasSuffix("/") || text.utf8.count > 1000 {
                return
                    "must not begin or end with `/` (and stay under 1000 bytes); Home Assistant's default is \"homeassistant\""
            }
            return nil
        }
        let nodeID = checkedString(.homeassistant, "node_id") { text in
            HomeAssistantConfig.isValidNodeID(text)
                ? nil
                : "must be 1–64 characters of A–Z, a–z, 0–9, `_` and `-`; it is the stem of the device's unique ids and topics"
        }
        let name = checkedString(.homeassistant, "name") { text in
            if text.allSatisfy({ $0 == " " || $0 == "\t" }) {
                return "must not be empty; it is the device's name in Home Assistant"
            }
            if text.unicodeScalars.contains(where: Self.isControl) || text.utf8.count > 200 {
                return "must be at most 200 bytes without control characters"
            }
            return nil
        }
        guard hasMQTT, !prefix.isInvalid, !nodeID.isInvalid, !name.isInvalid else { return nil }
        return HomeAssistantConfig(
            discoveryPrefix: prefix.or(HomeAssistantConfig.defaultDiscoveryPrefix),
            nodeID: nodeID.or(HomeAssistantConfig.defaultNodeID),
            name: name.or(HomeAssistantConfig.defaultName)
        )
    }

    /// `[notify]` (docs/CONTRACT.md#desktop): the table's presence turns notifications on.
    mutating func notifyConfig() -> NotifyConfig? {
        guard tableLines[.notify] != nil else { return nil }
        let everyOpening = boolean(.notify, "every_opening")
        let timeout = integer(
            .notify,
            "timeout_ms",
            in: NotifyConfig.timeoutRange,
            unit: " ms; 0 keeps it until dismissed"
        )
        guard !everyOpening.isInvalid, !timeout.isInvalid else { return nil }
        return NotifyConfig(
            everyOpening: everyOpening.or(false),
            timeoutMilliseconds: timeout.or(NotifyConfig.defaultTimeoutMilliseconds)
        )
    }

    /// `[esp32]` (docs/CONTRACT.md#configuration): v1 unless the table says 2. Nil when a
    /// value was refused (already reported).
    mutating func esp32Config() -> ESP32Config? {
        let version = integer(.esp32, "protocol", in: 1...2, unit: ": 1 is the plain 0x01, 2 signed frames")
        let keyID = integer(.esp32, "key_id", in: 1...255)
        guard !version.isInvalid, !keyID.isInvalid else { return nil }
        return ESP32Config(
            protocolVersion: version.value == 2 ? .v2 : .v1,
            keyID: keyID.value.map { UInt8($0) } ?? ESP32Config.defaultKeyID
        )
    }

    // MARK: Keys with their own rules

    private mutating func host(in table: ConfigTable, what: String) -> String? {
        let host = checkedString(table, "host") { text in
            if text.isEmpty { return "must not be empty; give the IPv4 or IPv6 literal or the host name of \(what)" }
            if text.unicodeScalars.contains(where: Self.isControl) { return "must not contain control characters" }
            guard text.hasPrefix("["), text.hasSuffix("]") else { return HostName.problem(with: text) }
            let inner = text.dropFirst().dropLast()
            if !inner.hasPrefix("["), IPAddress(literal: String(inner))?.family == .v6 { return nil }
            return "\(TOMLDocument.quoted(text)) is not a valid IPv6 address; brackets are only for IPv6 literals"
        }
        if case .absent = host {
            report(
                "\(table.rawValue).host",
                line: tableLines[table],
                "a host is required in [\(table.rawValue)]: the IPv4 or IPv6 literal or the host name of \(what)"
            )
        }
        guard let text = host.value else { return nil }
        // `[::1]` as in URLs, accepted above only around an IPv6 literal; stored bare, as
        // the socket layer takes it.
        return text.hasPrefix("[") ? String(text.dropFirst().dropLast()) : text
    }

    private mutating func caFile(tls: ConfigLookup<Bool>) -> String? {
        checkedString(.mqtt, "ca_file") { path in
            if path.isEmpty {
                return "must not be empty; leave ca_file out to use the system's trusted certificates"
            }
            if path.utf8.contains(0) { return "must not contain a NUL character" }
            if !tls.isInvalid, !tls.or(false) {
                return "ca_file is only used with tls = true; set tls = true or remove ca_file"
            }
            return nil
        }.value
    }

    private mutating func username() -> String? {
        checkedString(.mqtt, "username") { name in
            if name.isEmpty { return "must not be empty; leave username out to connect without one" }
            if name.unicodeScalars.contains(where: Self.isControl) { return "must not contain control characters" }
            return nil
        }.value
    }

    private mutating func clientIDPrefix() -> ConfigLookup<String> {
        checkedString(.mqtt, "client_id_prefix") { prefix in
            let why =
                "the client id is this prefix plus 8 hex digits, and MQTT 3.1.1 brokers need only accept 23 characters"
            if !prefix.utf8.allSatisfy(TOMLLineScanner.isBareKeyByte) {
                return "may only contain A–Z, a–z, 0–9, `_` and `-`; \(why) of that kind"
            }
            if prefix.utf8.count > 15 {
                return "the prefix is \(prefix.utf8.count) characters long, more than 15; \(why)"
            }
            return nil
        }
    }

    private mutating func topic(_ name: String) -> ConfigLookup<String> {
        checkedString(.mqtt, name) { topic in
            if topic.isEmpty { return "must not be empty" }
            if topic.utf8.contains(0) { return "must not contain a NUL character" }
            if topic.contains("+") || topic.contains("#") {
                return "topics must not contain wildcards (`+` or `#`): gate publishes and reads one exact topic"
            }
            if topic.utf8.count > 65535 {
                return "the topic is \(topic.utf8.count) bytes long; an MQTT topic has at most 65535"
            }
            return nil
        }
    }

    private mutating func checkTopicsDiffer(trigger: ConfigLookup<String>, status: ConfigLookup<String>) {
        guard !trigger.isInvalid, !status.isInvalid,
            trigger.or(MQTTConfig.defaultTriggerTopic) == status.or(MQTTConfig.defaultStatusTopic)
        else { return }
        let (key, line): (String, Int?) =
            switch (status, trigger) {
            case (.found(_, let line), _): ("mqtt.status_topic", line)
            case (_, .found(_, let line)): ("mqtt.trigger_topic", line)
            default: ("mqtt.status_topic", tableLines[.mqtt])
            }
        report(
            key,
            line: line,
            "trigger_topic and status_topic must differ; gate would take its own trigger for the ESP32's status"
        )
    }

    /// Home Assistant's topics and the ESP32's are disjoint (docs/CONTRACT.md#validation): a
    /// PRESS on the trigger topic would reach the relay directly, past gate's lock and cooldown,
    /// and the daemon's own messages on the status topic would be read as the relay's. Named
    /// on the ESP32's key when the file sets it, else on the `[homeassistant]` key that makes it.
    mutating func checkTopicsDisjoint(mqtt: MQTTConfig, homeAssistant: HomeAssistantConfig) {
        let esp32 = [("trigger_topic", mqtt.triggerTopic), ("status_topic", mqtt.statusTopic)]
        for use in HomeAssistantTopics(homeAssistant).uses {
            for (name, topic) in esp32 where topic == use.topic {
                let consequence =
                    "the ESP32's topics and Home Assistant's must differ, or messages for one reach the other: "
                    + "a press in Home Assistant could reach the relay directly, past gate's lock and cooldown"
                if let set = values[.mqtt]?[name] {
                    report(
                        "mqtt.\(name)",
                        line: set.line,
                        "\(TOMLDocument.quoted(topic)) is also \(use.role), made from homeassistant.\(use.key); "
                            + "\(consequence); choose another \(name) or homeassistant.\(use.key)"
                    )
                } else {
                    report(
                        "homeassistant.\(use.key)",
                        line: values[.homeassistant]?[use.key]?.line ?? tableLines[.homeassistant],
                        "makes \(use.role) \(TOMLDocument.quoted(topic)), which is mqtt.\(name); "
                            + "\(consequence); choose another \(use.key) or set mqtt.\(name)"
                    )
                }
            }
        }
    }

    // MARK: Typed values

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control
    }

    /// The value of `table.key` when `read` takes it (nil: another type); a value of
    /// another type is reported as not the `expected` one, and invalid.
    private mutating func typed<Value>(
        _ table: ConfigTable,
        _ key: String,
        expected: String,
        _ read: (TOMLValue) -> Value?
    ) -> ConfigLookup<Value> {
        guard let entry = values[table]?[key] else { return .absent }
        guard let value = read(entry.value) else {
            report(
                "\(table.rawValue).\(key)",
                line: entry.line,
                "expected \(expected), got \(entry.value.typeDescription)"
            )
            return .invalid
        }
        return .found(value, line: entry.line)
    }

    /// `lookup`, reported with `problem`'s words (nil when the value is fine) and then invalid.
    private mutating func checked<Value>(
        _ lookup: ConfigLookup<Value>,
        _ table: ConfigTable,
        _ key: String,
        _ problem: (Value) -> String?
    ) -> ConfigLookup<Value> {
        guard case .found(let value, let line) = lookup, let words = problem(value) else { return lookup }
        report("\(table.rawValue).\(key)", line: line, words)
        return .invalid
    }

    mutating func string(_ table: ConfigTable, _ key: String) -> ConfigLookup<String> {
        typed(table, key, expected: "a string") { if case .string(let text) = $0 { text } else { nil } }
    }

    private mutating func checkedString(
        _ table: ConfigTable,
        _ key: String,
        _ problem: (String) -> String?
    ) -> ConfigLookup<String> {
        checked(string(table, key), table, key, problem)
    }

    private mutating func boolean(_ table: ConfigTable, _ key: String) -> ConfigLookup<Bool> {
        typed(table, key, expected: "a boolean (true or false)") {
            if case .boolean(let flag) = $0 { flag } else { nil }
        }
    }

    private mutating func integer(
        _ table: ConfigTable,
        _ key: String,
        in range: ClosedRange<Int>,
        unit: String = ""
    ) -> ConfigLookup<Int> {
        let number = typed(table, key, expected: "an integer") {
            if case .integer(let number) = $0 { number } else { nil }
        }
        return checked(number, table, key) { number in
            (Int64(range.lowerBound)...Int64(range.upperBound)).contains(number)
                ? nil : "\(number) is out of range (\(range.lowerBound)–\(range.upperBound)\(unit))"
        }.map { Int($0) }
    }

    /// A duration: an integer or a float, finite, within `0…maximum` (`0` itself only when `allowsZero`).
    private mutating func seconds(
        _ table: ConfigTable,
        _ key: String,
        allowsZero: Bool,
        maximum: Int
    ) -> ConfigLookup<Double> {
        let number = typed(table, key, expected: "a number of seconds") { value -> (Double, String)? in
            switch value {
            case .integer(let number): (Double(number), "\(number)")
            case .float(let number): (number, "\(number)")
            case .string, .boolean: nil
            }
        }
        return checked(number, table, key) { value, written in
            if !value.isFinite { return "\(written) is not a finite number of seconds" }
            if allowsZero ? value < 0 : value <= 0 {
                return allowsZero
                    ? "\(written) is negative; it must be between 0 and \(maximum) seconds"
                    : "\(written) is not a usable timeout; it must be more than 0 seconds"
            }
            if value > Double(maximum) {
                return "\(written) is more than \(maximum) seconds; the value is in seconds, not milliseconds"
            }
            return nil
        }.map { value, _ in value == 0 ? 0 : value }  // -0.0 would print as "-0.0"; a plain zero reads better.
    }
}
