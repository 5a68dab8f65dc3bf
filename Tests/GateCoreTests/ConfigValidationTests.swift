import Testing

@testable import GateCore

/// Every problem `text` has, or none when it validates.
private func problems(_ text: String) -> [ConfigProblem] {
    do throws(ConfigError) {
        _ = try GateConfig.parse(toml: text, file: "gate.toml")
        return []
    } catch {
        return error.problems
    }
}

/// The one problem `text` has; records an issue when there are more or none.
private func problem(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ConfigProblem {
    let found = problems(text)
    #expect(found.count == 1, "expected one problem, got \(found)", sourceLocation: sourceLocation)
    return try #require(found.first, sourceLocation: sourceLocation)
}

private func parse(_ text: String) throws -> GateConfig {
    try GateConfig.parse(toml: text, file: "gate.toml")
}

/// A valid `[udp]` on lines 1–2 for tests about other tables.
private let udp = "[udp]\nhost = \"10.0.0.2\"\n"
/// A valid `[mqtt]` on lines 1–2.
private let mqtt = "[mqtt]\nhost = \"broker\"\n"

let specExample = """
    [udp]
    host = "192.168.1.50"     # the ESP32; IPv4 or IPv6 literal, or a host name
    port = 8080
    timeout = 2.0             # seconds, complete cycle

    [mqtt]
    host = "broker.example.de"
    port = 8883               # default 1883 without TLS, 8883 with
    tls = true
    ca_file = "/etc/ssl/certs/ca-certificates.crt"   # optional; system store otherwise
    username = "gate"         # the password is never in this file (section 5)
    client_id_prefix = "gate-"
    trigger_topic = "iot/house/gate/esp32/trigger"
    status_topic = "iot/house/gate/esp32/status"
    timeout = 5.0

    [button]                  # optional: only `gate daemon` reads it
    chip = "gpiochip0"
    line = 17
    active_low = true         # wired to ground with the internal pull-up
    debounce_ms = 50

    [runtime]
    reset_delay = 3.0         # seconds in timeout/error before ready again
    cooldown = 2.0            # seconds after a cycle before the next opening
    """

@Suite("Configuration: valid files and defaults")
struct ConfigParsingTests {
    @Test func specExampleParses() throws {
        let config = try parse(specExample)
        #expect(
            config
                == GateConfig(
                    udp: UDPConfig(host: "192.168.1.50", port: 8080, timeout: 2.0),
                    mqtt: MQTTConfig(
                        host: "broker.example.de",
                        port: 8883,
                        tls: true,
                        caFile: "/etc/ssl/certs/ca-certificates.crt",
                        username: "gate",
                        clientIDPrefix: "gate-",
                        triggerTopic: "iot/house/gate/esp32/trigger",
                        statusTopic: "iot/house/gate/esp32/status",
                        timeout: 5.0
                    ),
                    button: ButtonConfig(chip: "gpiochip0", line: 17, activeLow: true, debounceMilliseconds: 50),
                    runtime: RuntimeConfig(resetDelay: 3.0, cooldown: 2.0)
                )
        )
    }

    @Test func defaultsApply() throws {
        let config = try parse("[udp]\nhost = \"gate.local\"\n[mqtt]\nhost = \"broker\"\n[button]\nline = 4\n")
        #expect(config.udp == UDPConfig(host: "gate.local", port: 8080, timeout: 2.0))
        let mqtt = try #require(config.mqtt)
        #expect(mqtt.port == 1883)
        #expect(mqtt.tls == false)
        #expect(mqtt.caFile == nil && mqtt.username == nil)
        #expect(mqtt.clientIDPrefix == "gate-")
        #expect(mqtt.triggerTopic == "iot/house/gate/esp32/trigger")
        #expect(mqtt.statusTopic == "iot/house/gate/esp32/status")
        #expect(mqtt.timeout == 5.0)
        #expect(config.button == ButtonConfig(chip: "gpiochip0", line: 4, activeLow: true, debounceMilliseconds: 50))
        #expect(config.runtime == RuntimeConfig(resetDelay: 3.0, cooldown: 2.0))
    }

    @Test func tlsChangesTheDefaultPort() throws {
        #expect(try parse(mqtt + "tls = true").mqtt?.port == 8883)
        #expect(try parse(mqtt + "tls = false").mqtt?.port == 1883)
        #expect(try parse(mqtt + "tls = true\nport = 1884").mqtt?.port == 1884)
    }

    @Test func absentTablesStayAbsent() throws {
        let config = try parse(mqtt)
        #expect(config.udp == nil)
        #expect(config.button == nil)
        #expect(config.mqtt != nil)
    }

    @Test func integerTimeoutsAndZeroDelaysAreAccepted() throws {
        let config = try parse(udp + "timeout = 3\n[runtime]\nreset_delay = 0\ncooldown = 0.0")
        #expect(config.udp?.timeout == 3.0)
        #expect(config.runtime == RuntimeConfig(resetDelay: 0, cooldown: 0))
    }

    @Test(arguments: [
        ("::1", "::1"), ("[fe80::1]", "fe80::1"), ("[2001:db8::42]", "2001:db8::42"),
        ("10.0.0.2", "10.0.0.2"), ("gate.example.de.", "gate.example.de."),
    ])
    func hostsAreStoredWithoutBrackets(written: String, stored: String) throws {
        #expect(try parse("[udp]\nhost = \"\(written)\"").udp?.host == stored)
    }

    @Test func dottedKeysAtTheTopAreTheirTable() throws {
        // TOML defines `udp.host = …` as the key `host` of the table `udp`.
        #expect(try parse("udp.host = \"10.0.0.9\"\nudp.port = 9").udp == UDPConfig(host: "10.0.0.9", port: 9))
    }

    @Test func clientIDPrefixMayBeEmptyOrFifteenBytes() throws {
        #expect(try parse(mqtt + "client_id_prefix = \"\"").mqtt?.clientIDPrefix == "")
        #expect(try parse(mqtt + "client_id_prefix = \"abcdefghij_-123\"").mqtt?.clientIDPrefix == "abcdefghij_-123")
    }
}

@Suite("Configuration: rendering")
struct ConfigRenderingTests {
    @Test func specExampleRoundTrips() throws {
        let config = try parse(specExample)
        let text = config.renderedTOML(source: "/etc/gate/gate.toml")
        #expect(text.hasPrefix("# effective configuration from /etc/gate/gate.toml\n"))
        #expect(try GateConfig.parse(toml: text, file: "rendered") == config)
    }

    @Test func defaultsAreWrittenOut() throws {
        let text = try parse(udp).renderedTOML(source: "test")
        #expect(text.contains("port = 8080\n"))
        #expect(text.contains("timeout = 2.0\n"))
        #expect(text.contains("[runtime]\nreset_delay = 3.0\ncooldown = 2.0\n"))
        #expect(!text.contains("[mqtt]"))
        #expect(!text.contains("[button]"))
    }

    @Test func mqttTableSaysWhereThePasswordComesFrom() throws {
        let text = try parse(mqtt).renderedTOML(source: "test")
        let comment = try #require(text.split(separator: "\n").first { $0.hasPrefix("# the password") })
        #expect(comment.contains("never stored in this file"))
        #expect(comment.contains("$CREDENTIALS_DIRECTORY/mqtt-password"))
        #expect(comment.contains("Secret Service"))
        #expect(!text.contains("password ="))
    }

    @Test func awkwardValuesRoundTrip() throws {
        let config = GateConfig(
            udp: UDPConfig(host: "fe80::1", port: 1, timeout: 0.25),
            mqtt: MQTTConfig(
                host: "broker",
                port: 65535,
                tls: true,
                caFile: "/tmp/my \"CA\"\\ bundle é.pem",
                username: "ga'te\u{00e9}\u{1F600}",
                clientIDPrefix: "",
                triggerTopic: "a/\"b\"/c\\d",
                statusTopic: "ü/status",
                timeout: 1e-05
            ),
            button: ButtonConfig(chip: "/dev/gpiochip4", line: 0, activeLow: false, debounceMilliseconds: 0),
            runtime: RuntimeConfig(resetDelay: 3600, cooldown: 0.1 + 0.2)
        )
        let text = config.renderedTOML(source: "odd\nsource = 1")
        #expect(try GateConfig.parse(toml: text, file: "rendered") == config)
        #expect(text.contains("timeout = 0.25\n"))
    }
}

@Suite("Configuration: problems")
struct ConfigProblemTests {
    @Test(arguments: ["", "# only a comment\n\n   # another\n", "[runtime]\ncooldown = 1", "[button]\nline = 3"])
    func udpOrMQTTIsRequired(text: String) throws {
        let found = try problem(text)
        #expect(found.key == nil)
        #expect(found.line == nil)
        #expect(found.message.contains("[udp]") && found.message.contains("[mqtt]"))
    }

    @Test func portOutOfRangeReadsAsASentence() throws {
        let found = try problem(udp + "port = 70000")
        #expect(found.description == "gate.toml:3: udp.port: 70000 is out of range (1–65535)")
    }

    @Test(arguments: ["port = 0", "port = -1", "port = \"8080\"", "port = 8080.0", "port = true"])
    func badPorts(line: String) throws {
        let found = try problem(mqtt + line)
        #expect(found.key == "mqtt.port")
        #expect(found.line == 3)
    }

    @Test func wrongTypesNameBothTypes() throws {
        #expect(try problem(udp + "port = \"8080\"").message == "expected an integer, got a string")
        #expect(try problem(udp + "timeout = \"2\"").message == "expected a number of seconds, got a string")
        #expect(try problem(mqtt + "tls = 1").message == "expected a boolean (true or false), got an integer")
        #expect(try problem(mqtt + "username = false").message == "expected a string, got a boolean")
        #expect(try problem(udp + "[button]\nline = 1.5").message == "expected an integer, got a float")
    }

    @Test func unknownTablesAreRefused() throws {
        let typo = try problem(udp + "[mqt]\nhost = \"x\"")
        #expect(typo.key == "mqt")
        #expect(typo.line == 3)
        #expect(typo.message.contains("did you mean [mqtt]?"))
        let nested = try problem(udp + "[udp.extra]\nkey = 1")
        #expect(nested.key == "udp.extra")
        #expect(nested.line == 3)
        #expect(nested.message.contains("unknown table"))
        let far = try problem(udp + "\n[logging]")
        #expect(far.key == "logging")
        #expect(far.line == 4)
        #expect(!far.message.contains("did you mean"))
    }

    @Test func unknownKeysSuggestTheClosestKey() throws {
        let typo = try problem(udp + "timout = 2.0")
        #expect(typo.key == "udp.timout")
        #expect(typo.line == 3)
        #expect(typo.message.contains("unknown key"))
        #expect(typo.message.contains("did you mean `timeout`?"))
        #expect(try problem(mqtt + "Client_ID_Prefix = \"x\"").message.contains("did you mean `client_id_prefix`?"))
        let far = try problem(udp + "colour = \"red\"")
        #expect(far.key == "udp.colour")
        #expect(!far.message.contains("did you mean"))
        #expect(far.message.contains("`host`"))
    }

    @Test func keysOutsideATableAreRefused() throws {
        let found = try problem("port = 8080\n" + udp)
        #expect(found.key == "port")
        #expect(found.line == 1)
        #expect(found.message.contains("table"))
    }

    @Test(arguments: [
        "[mqtt]\nhost = \"broker\"\npassword = \"s3cr3t-VALUE\"",
        "[mqtt]\nhost = \"broker\"\nPassword = \"s3cr3t-VALUE\"",
        "password = \"s3cr3t-VALUE\"\n[mqtt]\nhost = \"broker\"",
        "[udp]\nhost = \"10.0.0.2\"\nmqtt_PASSWORD = 's3cr3t-VALUE'",
        "[mqtt]\nhost = \"broker\"\npassword = s3cr3t-VALUE",
        "[mqtt]\nhost = \"broker\"\npassword = \"s3cr3t-VALUE\\q\"",
        "[mqtt]\nhost = \"broker\"\npassword = [\"s3cr3t-VALUE\"]",
        "[mqtt]\nhost = \"broker\"\npassword = 12345",
        "[mqtt]\nhost = \"broker\"\n[password]\nvalue = \"s3cr3t-VALUE\"",
    ])
    func passwordsAreRefusedWithoutEchoingThem(text: String) throws {
        let found = problems(text)
        let advice = try #require(found.first { $0.message.contains("gate secret set mqtt-password") })
        #expect(advice.message.contains("secrets do not live in files"))
        #expect(advice.message.contains("mqtt-password") && advice.message.contains("$CREDENTIALS_DIRECTORY"))
        #expect(advice.key?.lowercased().contains("password") == true)
        #expect(advice.line != nil)
        for problem in found {
            #expect(!problem.description.contains("s3cr3t"))
            #expect(!problem.description.contains("12345"))
        }
    }

    @Test("Which key names count as a password")
    func passwordLikeNames() {
        for name in [
            "password", "Password", "MQTT_PASSWORD", "mqttpassword", "password2", "passwd", "PASSWD", "x-password-x",
        ] {
            #expect(ConfigValidator.isPasswordLike(name), "\(name)")
        }
        for name in ["", "pass", "passw", "passwor", "pwd", "username", "passwdx", "pass_word", "drowssap"] {
            #expect(!ConfigValidator.isPasswordLike(name), "\(name)")
        }
    }

    @Test func passwordProblemHasTheKeyAndLine() throws {
        let found = try problem(mqtt + "password = \"hunter2\"")
        #expect(found.key == "mqtt.password")
        #expect(found.line == 3)
    }

    @Test func hostIsRequired() throws {
        let udpHost = try problem("# comment\n[udp]\nport = 9")
        #expect(udpHost.key == "udp.host")
        #expect(udpHost.line == 2)
        #expect(try problem("[mqtt]\ntls = true").key == "mqtt.host")
    }

    @Test(arguments: [
        "", "exa mple.com", "999.1.1.1", "1.2.3", "-gate.example", "a..b", "fe80::1%eth0", "[192.168.1.1]",
        "[::1", "[[::1]]", "gate\n.local", "127.0.0.1\u{0}.evil", "::g", String(repeating: "a", count: 64) + ".de",
    ])
    func badHosts(host: String) throws {
        let found = try problem("[udp]\nhost = \(TOMLDocument.quoted(host))")
        #expect(found.key == "udp.host")
        #expect(found.line == 2)
        #expect(!found.description.contains("\n"))
    }

    @Test(arguments: [
        ("timeout = 0", "more than 0"), ("timeout = -1.5", "more than 0"), ("timeout = 0.0", "more than 0"),
        ("timeout = 61", "seconds, not milliseconds"), ("timeout = 2000", "seconds, not milliseconds"),
        ("timeout = inf", "finite"), ("timeout = nan", "finite"), ("timeout = -inf", "finite"),
    ])
    func badTimeouts(line: String, words: String) throws {
        for (table, name) in [(udp, "udp"), (mqtt, "mqtt")] {
            let found = try problem(table + line)
            #expect(found.key == "\(name).timeout")
            #expect(found.line == 3)
            #expect(found.message.contains(words))
        }
        #expect(try parse(udp + "timeout = 60").udp?.timeout == 60)
    }

    @Test(arguments: [
        ("reset_delay = -1", "runtime.reset_delay", "negative"), ("cooldown = -0.5", "runtime.cooldown", "negative"),
        ("reset_delay = 3601", "runtime.reset_delay", "3600"), ("cooldown = 1e9", "runtime.cooldown", "milliseconds"),
        ("cooldown = nan", "runtime.cooldown", "finite"), ("cooldown = \"2\"", "runtime.cooldown", "got a string"),
    ])
    func badRuntime(line: String, key: String, words: String) throws {
        let found = try problem(udp + "[runtime]\n" + line)
        #expect(found.key == key)
        #expect(found.line == 4)
        #expect(found.message.contains(words))
    }

    @Test func caFileRules() throws {
        let plain = try problem(mqtt + "ca_file = \"/etc/ca.pem\"")
        #expect(plain.key == "mqtt.ca_file")
        #expect(plain.line == 3)
        #expect(plain.message.contains("ca_file is only used with tls = true"))
        #expect(try problem(mqtt + "tls = false\nca_file = \"/etc/ca.pem\"").line == 4)
        #expect(try problem(mqtt + "tls = true\nca_file = \"\"").key == "mqtt.ca_file")
        #expect(try problem(mqtt + "tls = true\nca_file = \"a\\u0000b\"").message.contains("NUL"))
        #expect(try parse(mqtt + "tls = true\nca_file = \"certs/ca.pem\"").mqtt?.caFile == "certs/ca.pem")
    }

    @Test(arguments: [
        "username = \"\"", "username = \"ga\\nte\"", "username = \"a\\u0000\"", "username = \"\\u0085x\"",
    ])
    func badUsernames(line: String) throws {
        let found = try problem(mqtt + line)
        #expect(found.key == "mqtt.username")
        #expect(found.line == 3)
    }

    @Test func clientIDPrefixRules() throws {
        let long = try problem(mqtt + "client_id_prefix = \"abcdefghijklmnop\"")
        #expect(long.key == "mqtt.client_id_prefix")
        #expect(long.line == 3)
        #expect(long.message.contains("23"))
        #expect(long.message.contains("8 hex digits"))
        for bad in ["gate/", "gate prefix", "gäte", "a.b"] {
            let found = try problem(mqtt + "client_id_prefix = \"\(bad)\"")
            #expect(found.key == "mqtt.client_id_prefix")
            #expect(found.message.contains("A–Z"))
        }
    }

    @Test(arguments: [
        ("trigger_topic = \"iot/+/trigger\"", "mqtt.trigger_topic", "wildcards"),
        ("status_topic = \"iot/gate/#\"", "mqtt.status_topic", "wildcards"),
        ("trigger_topic = \"\"", "mqtt.trigger_topic", "empty"),
        ("status_topic = \"a\\u0000b\"", "mqtt.status_topic", "NUL"),
        ("status_topic = 7", "mqtt.status_topic", "expected a string"),
        ("status_topic = \"iot/house/gate/esp32/trigger\"", "mqtt.status_topic", "must differ"),
        ("trigger_topic = \"iot/house/gate/esp32/status\"", "mqtt.trigger_topic", "must differ"),
    ])
    func badTopics(line: String, key: String, words: String) throws {
        let found = try problem(mqtt + line)
        #expect(found.key == key)
        #expect(found.line == 3)
        #expect(found.message.contains(words))
    }

    @Test func topicsAreLimitedTo65535Bytes() throws {
        let found = try problem(mqtt + "trigger_topic = \"\(String(repeating: "é", count: 32768))\"")
        #expect(found.key == "mqtt.trigger_topic")
        #expect(found.message.contains("65535"))
        #expect(try parse(mqtt + "trigger_topic = \"\(String(repeating: "a", count: 65535))\"").mqtt != nil)
    }

    @Test func equalCustomTopicsAreReportedOnTheStatusTopic() throws {
        let found = try problem(mqtt + "trigger_topic = \"x/y\"\nstatus_topic = \"x/y\"")
        #expect(found.key == "mqtt.status_topic")
        #expect(found.line == 4)
    }

    @Test(
        arguments: [
            ("chip = \"\"\nline = 1", "button.chip", 4), ("line = 1024", "button.line", 4),
            ("line = -1", "button.line", 4),
            ("line = \"17\"", "button.line", 4), ("line = 1\nactive_low = \"yes\"", "button.active_low", 5),
            ("line = 1\ndebounce_ms = 1001", "button.debounce_ms", 5),
            ("line = 1\ndebounce_ms = -1", "button.debounce_ms", 5),
            ("line = 1\ndebounce_ms = 0.05", "button.debounce_ms", 5), ("chip = \"gpiochip0\"", "button.line", 3),
        ] as [(String, String, Int)]
    )
    func badButtons(lines: String, key: String, line: Int) throws {
        let found = try problem(udp + "[button]\n" + lines)
        #expect(found.key == key)
        #expect(found.line == line)
    }

    @Test func everyProblemIsReportedInLineOrder() {
        let found = problems(
            """
            [udp]
            host = "bad host"
            port = 0
            timout = 2
            [mqtt]
            port = 99999
            tls = "yes"
            password = "x"
            [runtime]
            cooldown = -1
            """
        )
        #expect(
            found.map(\.key) == [
                "udp.host", "udp.port", "udp.timout", "mqtt.host", "mqtt.port", "mqtt.tls", "mqtt.password",
                "runtime.cooldown",
            ]
        )
        #expect(found.map(\.line) == [2, 3, 4, 5, 6, 7, 8, 10])
        #expect(found.allSatisfy { $0.file == "gate.toml" })
    }

    @Test func syntaxErrorsCarryFileKeyAndLine() throws {
        let found = try problem("[udp]\nhost = \"10.0.0.2\"\n\nport = [8080]")
        #expect(found.file == "gate.toml")
        #expect(found.line == 4)
        #expect(found.key == "udp.port")
        #expect(found.message.contains("arrays are not used"))
        #expect(try problem("[udp]\nhost = \"a\"\nhost = \"b\"").message.contains("duplicate key"))
        #expect(try problem("[udp]\nhost = \"a\"\n[udp]").line == 3)
    }
}

@Suite("Configuration: [notify] (docs/CONTRACT.md#desktop)")
struct NotifyConfigTests {
    @Test func absentMeansOff() throws {
        #expect(try parse(udp).notify == nil)
    }

    @Test func theTableAloneTurnsItOnWithDefaults() throws {
        #expect(try parse(udp + "[notify]\n").notify == NotifyConfig(everyOpening: false, timeoutMilliseconds: 10_000))
    }

    @Test func everyKey() throws {
        let config = try parse(udp + "[notify]\nevery_opening = true\ntimeout_ms = 0\n")
        #expect(config.notify == NotifyConfig(everyOpening: true, timeoutMilliseconds: 0))
    }

    @Test func unknownKeyIsRefusedByName() throws {
        let found = try problem(udp + "[notify]\nenabled = true\n")
        #expect(found.key == "notify.enabled")
        #expect(found.line == 4)
        #expect(found.message.contains("`every_opening`"), "\(found)")
    }

    @Test func misspelledTableIsGuessed() {
        let found = problems(udp + "[notfy]\n")
        #expect(found.first?.message.contains("did you mean [notify]") == true, "\(found)")
    }

    @Test(arguments: ["-1", "3600001", "\"10s\"", "1.5"])
    func badTimeoutNamesTheKey(value: String) throws {
        #expect(try problem(udp + "[notify]\ntimeout_ms = \(value)\n").key == "notify.timeout_ms")
    }

    @Test func everyOpeningIsABoolean() {
        let found = problems(udp + "[notify]\nevery_opening = \"yes\"\n")
        #expect(found.first?.key == "notify.every_opening")
        #expect(found.first?.message.contains("boolean") == true, "\(found)")
    }

    @Test func problemsElsewhereStillCheckNotify() {
        // A file without [udp] or [mqtt] is refused, and its [notify] mistakes are said in the same run.
        let found = problems("[notify]\ntimeout_ms = -5\n")
        #expect(found.contains { $0.key == "notify.timeout_ms" }, "\(found)")
    }

    @Test func renderedReadsBackEqual() throws {
        let config = try parse(udp + "[notify]\nevery_opening = true\ntimeout_ms = 2500\n")
        let rendered = config.renderedTOML(source: "gate.toml")
        #expect(rendered.contains("[notify]\nevery_opening = true\ntimeout_ms = 2500\n"), "\(rendered)")
        #expect(try parse(rendered) == config)
    }

    @Test func addedAndRemovedOnReload() throws {
        let off = try parse(udp)
        let on = try parse(udp + "[notify]\n")
        #expect(on.changes(from: off) == [ConfigChange(key: "notify", kind: .added)])
        #expect(off.changes(from: on) == [ConfigChange(key: "notify", kind: .removed)])
        #expect(GateConfig.auditLine(on.changes(from: off)) == "configuration reloaded; changed: notify (added)")
    }
}
