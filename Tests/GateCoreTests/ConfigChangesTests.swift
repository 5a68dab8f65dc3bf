import Testing

@testable import GateCore

/// Every table present and every optional key set, so that each key can be changed alone.
private let base = GateConfig(
    udp: UDPConfig(host: "192.168.1.50", port: 8080, timeout: 2.0),
    mqtt: MQTTConfig(
        host: "broker.example.de",
        port: 8883,
        tls: true,
        caFile: "/etc/ssl/ca.pem",
        username: "gate",
        clientIDPrefix: "gate-",
        triggerTopic: "iot/trigger",
        statusTopic: "iot/status",
        timeout: 5.0
    ),
    button: ButtonConfig(chip: "gpiochip0", line: 17, activeLow: true, debounceMilliseconds: 50),
    runtime: RuntimeConfig(resetDelay: 3.0, cooldown: 2.0),
    notify: NotifyConfig(everyOpening: false, timeoutMilliseconds: 10_000)
)

/// Each key of docs/CONTRACT.md#configuration, in the file's order, with an edit of `base` that changes only it.
private let singleKeyEdits: [(key: String, edit: @Sendable (inout GateConfig) -> Void)] = [
    ("udp.host", { $0.udp?.host = "10.0.0.9" }),
    ("udp.port", { $0.udp?.port = 9090 }),
    ("udp.timeout", { $0.udp?.timeout = 2.5 }),
    ("mqtt.host", { $0.mqtt?.host = "other.example.de" }),
    ("mqtt.port", { $0.mqtt?.port = 8884 }),
    ("mqtt.tls", { $0.mqtt?.tls = false }),
    ("mqtt.ca_file", { $0.mqtt?.caFile = "/etc/ssl/other.pem" }),
    ("mqtt.username", { $0.mqtt?.username = "someone" }),
    ("mqtt.client_id_prefix", { $0.mqtt?.clientIDPrefix = "door-" }),
    ("mqtt.trigger_topic", { $0.mqtt?.triggerTopic = "iot/trigger2" }),
    ("mqtt.status_topic", { $0.mqtt?.statusTopic = "iot/status2" }),
    ("mqtt.timeout", { $0.mqtt?.timeout = 4.0 }),
    ("esp32.protocol", { $0.esp32.protocolVersion = .v2 }),
    ("esp32.key_id", { $0.esp32.keyID = 3 }),
    ("button.chip", { $0.button?.chip = "gpiochip1" }),
    ("button.line", { $0.button?.line = 27 }),
    ("button.active_low", { $0.button?.activeLow = false }),
    ("button.debounce_ms", { $0.button?.debounceMilliseconds = 20 }),
    ("runtime.reset_delay", { $0.runtime.resetDelay = 1.0 }),
    ("runtime.cooldown", { $0.runtime.cooldown = 0.5 }),
    ("notify.every_opening", { $0.notify?.everyOpening = true }),
    ("notify.timeout_ms", { $0.notify?.timeoutMilliseconds = 0 }),
]

@Suite("Configuration: changes on reload")
struct ConfigChangesTests {
    @Test func equalConfigurationsHaveNoChanges() {
        #expect(base.changes(from: base).isEmpty)
        #expect(GateConfig(udp: UDPConfig(host: "a")).changes(from: GateConfig(udp: UDPConfig(host: "a"))).isEmpty)
        #expect(GateConfig.auditLine(base.changes(from: base)) == "configuration reloaded; nothing changed")
    }

    @Test(arguments: singleKeyEdits.indices)
    func eachKeyIsNamedAlone(index: Int) {
        let (key, edit) = singleKeyEdits[index]
        var new = base
        edit(&new)
        #expect(new.changes(from: base) == [ConfigChange(key: key, kind: .changed)])
        #expect(base.changes(from: new) == [ConfigChange(key: key, kind: .changed)])
    }

    @Test func everyKeyChangedComesInTheFileOrder() {
        var new = base
        for (_, edit) in singleKeyEdits.reversed() { edit(&new) }
        #expect(new.changes(from: base).map(\.key) == singleKeyEdits.map(\.key))
        #expect(new.changes(from: base).allSatisfy { $0.kind == .changed })
    }

    @Test func keysAreTheNamesTheRendererWrites() {
        // A key the audit line names must be one a user can find in `gate config show`.
        let rendered = base.renderedTOML(source: "test")
        for (key, _) in singleKeyEdits {
            let parts = key.split(separator: ".")
            #expect(rendered.contains("[\(parts[0])]\n"), "no table for \(key)")
            #expect(rendered.contains("\n\(parts[1]) = "), "no key for \(key)")
        }
    }

    @Test func optionalKeysAppearingOrDisappearingAreChanges() {
        var new = base
        new.mqtt?.caFile = nil
        new.mqtt?.username = nil
        #expect(
            new.changes(from: base) == [
                ConfigChange(key: "mqtt.ca_file", kind: .changed), ConfigChange(key: "mqtt.username", kind: .changed),
            ]
        )
        #expect(base.changes(from: new).map(\.description) == ["mqtt.ca_file", "mqtt.username"])
    }

    @Test func tablesAddedOrRemovedAreOneChangeEach() {
        let udpOnly = GateConfig(udp: base.udp, runtime: base.runtime)
        let grown = base.changes(from: udpOnly)
        #expect(
            grown == [
                ConfigChange(key: "mqtt", kind: .added), ConfigChange(key: "button", kind: .added),
                ConfigChange(key: "notify", kind: .added),
            ]
        )
        #expect(grown.map(\.description) == ["mqtt (added)", "button (added)", "notify (added)"])
        let shrunk = udpOnly.changes(from: base)
        #expect(
            shrunk == [
                ConfigChange(key: "mqtt", kind: .removed), ConfigChange(key: "button", kind: .removed),
                ConfigChange(key: "notify", kind: .removed),
            ]
        )
        #expect(shrunk.map(\.description) == ["mqtt (removed)", "button (removed)", "notify (removed)"])
    }

    @Test func tableAndKeyChangesMixInTheFileOrder() {
        let old = GateConfig(mqtt: base.mqtt, button: base.button, runtime: base.runtime)
        var new = GateConfig(udp: base.udp, mqtt: base.mqtt, runtime: base.runtime)
        new.mqtt?.statusTopic = "x/y"
        new.runtime.cooldown = 0
        let changes = new.changes(from: old)
        #expect(
            changes.map(\.description) == ["udp (added)", "mqtt.status_topic", "button (removed)", "runtime.cooldown"]
        )
        #expect(
            GateConfig.auditLine(changes)
                == "configuration reloaded; changed: udp (added), mqtt.status_topic, button (removed), runtime.cooldown"
        )
    }

    @Test func theAuditLineNamesKeysNeverValues() {
        var new = base
        new.mqtt?.username = "hunter-user"
        new.mqtt?.caFile = "/secret/place/ca.pem"
        new.udp?.host = "10.9.8.7"
        let line = GateConfig.auditLine(new.changes(from: base))
        #expect(line == "configuration reloaded; changed: udp.host, mqtt.ca_file, mqtt.username")
        for value in ["hunter-user", "/secret/place", "10.9.8.7", "gate", "192.168.1.50"] {
            #expect(!line.contains(value), "the audit line shows \(value)")
        }
    }
}
