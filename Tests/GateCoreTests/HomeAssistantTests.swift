import GateHomeAssistant
import Testing

@testable import GateCore

private func parse(_ text: String) throws -> GateConfig {
    try GateConfig.parse(toml: text, file: "gate.toml")
}

private func problems(_ text: String) -> [ConfigProblem] {
    do throws(ConfigError) {
        _ = try GateConfig.parse(toml: text, file: "gate.toml")
        return []
    } catch {
        return error.problems
    }
}

private let mqtt = "[mqtt]\nhost = \"broker\"\n"

@Suite("Configuration: [homeassistant] (docs/CONTRACT.md#home-assistant)")
struct HomeAssistantConfigTests {
    @Test func defaults() throws {
        let config = try parse(mqtt + "[homeassistant]\n")
        #expect(
            config.homeAssistant
                == HomeAssistantConfig(discoveryPrefix: "homeassistant", nodeID: "garden_gate", name: "Garden gate")
        )
    }

    @Test func absentMeansNone() throws {
        #expect(try parse(mqtt).homeAssistant == nil)
    }

    @Test func everyKey() throws {
        let config = try parse(
            mqtt
                + "[homeassistant]\ndiscovery_prefix = \"ha/discovery\"\nnode_id = \"front-Gate_2\"\nname = \"Front gate ✓\"\n"
        )
        #expect(
            config.homeAssistant
                == HomeAssistantConfig(discoveryPrefix: "ha/discovery", nodeID: "front-Gate_2", name: "Front gate ✓")
        )
    }

    @Test func needsMQTT() {
        let found = problems("[udp]\nhost = \"10.0.0.2\"\n[homeassistant]\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "homeassistant")
        #expect(found.first?.line == 3)
        #expect(found.first?.message.contains("needs [mqtt]") == true)
    }

    @Test func unknownKeyRefused() {
        let found = problems(mqtt + "[homeassistant]\nnode = \"x\"\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "homeassistant.node")
        #expect(
            found.first?.message.contains("did you mean `name`") == true
                || found.first?.message.contains("node_id") == true,
            "\(found)"
        )
    }

    @Test func misspelledTableSuggested() {
        let found = problems(mqtt + "[homeassistent]\n")
        #expect(found.first?.message.contains("did you mean [homeassistant]") == true, "\(found)")
    }

    @Test(arguments: ["", "a b", "gate/x", "gate+", "gäte", String(repeating: "n", count: 65)])
    func badNodeID(_ value: String) {
        let found = problems(mqtt + "[homeassistant]\nnode_id = \(TOMLDocument.quoted(value))\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "homeassistant.node_id")
        #expect(found.first?.line == 4)
    }

    @Test(arguments: ["", "ha/#", "+", "/homeassistant", "homeassistant/", "a\u{1}b"])
    func badPrefix(_ value: String) {
        let found = problems(mqtt + "[homeassistant]\ndiscovery_prefix = \(TOMLDocument.quoted(value))\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "homeassistant.discovery_prefix")
    }

    @Test(arguments: ["", "  ", "a\nb"])
    func badName(_ value: String) {
        let found = problems(mqtt + "[homeassistant]\nname = \(TOMLDocument.quoted(value))\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "homeassistant.name")
    }

    @Test func wrongType() {
        let found = problems(mqtt + "[homeassistant]\nnode_id = 3\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.message.contains("expected a string") == true)
    }

    @Test func passwordRefused() {
        let found = problems(mqtt + "[homeassistant]\npassword = \"x\"\n")
        #expect(found.first?.message.contains("secrets do not live in files") == true, "\(found)")
    }

    /// Issue 28, item 11: HA's PRESS on the ESP32's trigger topic would reach the relay
    /// directly, past gate's lock and cooldown (docs/CONTRACT.md#validation).
    @Test(arguments: [
        ("trigger_topic = \"gate/garden_gate/open\"", "mqtt.trigger_topic", "command topic"),
        ("status_topic = \"gate/garden_gate/open\"", "mqtt.status_topic", "command topic"),
        ("trigger_topic = \"gate/garden_gate/availability\"", "mqtt.trigger_topic", "availability"),
        ("status_topic = \"homeassistant/status\"", "mqtt.status_topic", "Home Assistant's own status"),
    ])
    func topicsCollidingWithHomeAssistantAreRefused(line: String, key: String, words: String) throws {
        let found = problems(mqtt + line + "\n[homeassistant]\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == key)
        #expect(found.first?.line == 3)
        #expect(found.first?.message.contains(words) == true, "\(found)")
        #expect(found.first?.message.contains("past gate's lock and cooldown") == true, "\(found)")
        // The same topics without Home Assistant are an ordinary configuration.
        #expect(try parse(mqtt + line + "\n").mqtt != nil)
    }

    @Test func everyHomeAssistantTopicIsCheckedAgainstBothESP32Topics() throws {
        let config = HomeAssistantConfig(discoveryPrefix: "ha", nodeID: "front", name: "Front")
        let table = "[homeassistant]\ndiscovery_prefix = \"ha\"\nnode_id = \"front\"\n"
        for topic in HomeAssistantTopics(config).all {
            for key in ["trigger_topic", "status_topic"] {
                let found = problems(mqtt + "\(key) = \(TOMLDocument.quoted(topic))\n" + table)
                #expect(found.map(\.key) == ["mqtt.\(key)"], "\(topic): \(found)")
            }
        }
    }

    @Test func aDiscoveryPrefixThatMakesHomeAssistantsStatusTheESP32sIsNamed() {
        // The ESP32's topics are the defaults here: the prefix is the key to change.
        let found = problems(mqtt + "[homeassistant]\ndiscovery_prefix = \"iot/house/gate/esp32\"\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "homeassistant.discovery_prefix")
        #expect(found.first?.line == 4)
        #expect(found.first?.message.contains("mqtt.status_topic") == true, "\(found)")
    }

    @Test func renderedReadsBack() throws {
        let config = try parse(mqtt + "[homeassistant]\nnode_id = \"g\"\nname = \"Gate \\\"A\\\"\"\n")
        let rendered = config.renderedTOML(source: "gate.toml")
        #expect(
            rendered.contains("[homeassistant]\ndiscovery_prefix = \"homeassistant\"\nnode_id = \"g\"\n"),
            "\(rendered)"
        )
        #expect(try parse(rendered) == config)
    }

    @Test func changesNamed() throws {
        let old = try parse(mqtt + "[homeassistant]\n")
        let renamed = try parse(mqtt + "[homeassistant]\nname = \"Other\"\n")
        #expect(renamed.changes(from: old).map(\.description) == ["homeassistant.name"])
        #expect(try parse(mqtt).changes(from: old).map(\.description) == ["homeassistant (removed)"])
        let plain = try parse(mqtt)
        #expect(old.changes(from: plain).map(\.description) == ["homeassistant (added)"])
    }
}

@Suite("Home Assistant discovery payloads (docs/CONTRACT.md#home-assistant)")
struct HomeAssistantDiscoveryTests {
    let discovery = HomeAssistantDiscovery(
        config: HomeAssistantConfig(),
        mqtt: MQTTConfig(host: "broker"),
        version: "9.9"
    )

    static let device =
        #""device":{"identifiers":["gate_garden_gate"],"name":"Garden gate","manufacturer":"gate","model":"ESP32 relay (UDP, MQTT)","sw_version":"9.9"},"origin":{"name":"gate","sw_version":"9.9"}"#
    static let availability =
        #""availability_topic":"gate/garden_gate/availability","payload_available":"online","payload_not_available":"offline""#

    @Test func topics() {
        let topics = discovery.topics
        #expect(
            topics.discoveryConfigs == [
                "homeassistant/button/garden_gate/open/config",
                "homeassistant/binary_sensor/garden_gate/relay/config",
                "homeassistant/sensor/garden_gate/last_opening/config",
            ]
        )
        #expect(topics.command == "gate/garden_gate/open")
        #expect(topics.availability == "gate/garden_gate/availability")
        #expect(topics.homeAssistantStatus == "homeassistant/status")
    }

    @Test func button() {
        #expect(
            discovery.button.serialized()
                == #"{"name":"Open","unique_id":"garden_gate_open","object_id":"garden_gate_open","command_topic":"gate/garden_gate/open","payload_press":"PRESS","retain":false,"qos":0,"icon":"mdi:gate-open",\#(Self.availability),\#(Self.device)}"#
        )
    }

    @Test func relayFollowsTheESP32sStatusTopic() {
        let custom = HomeAssistantDiscovery(
            config: HomeAssistantConfig(),
            mqtt: MQTTConfig(host: "b", statusTopic: "esp/status"),
            version: "9.9"
        )
        #expect(
            custom.relay.serialized()
                == #"{"name":"Relay","unique_id":"garden_gate_relay","object_id":"garden_gate_relay","state_topic":"esp/status","payload_on":"1","payload_off":"0","icon":"mdi:electric-switch",\#(Self.availability),\#(Self.device)}"#
        )
    }

    @Test func lastOpening() {
        #expect(
            discovery.lastOpening.serialized()
                == #"{"name":"Last opening","unique_id":"garden_gate_last_opening","object_id":"garden_gate_last_opening","state_topic":"gate/garden_gate/last_opening","json_attributes_topic":"gate/garden_gate/last_opening/attributes","device_class":"enum","options":["success","timeout","error","interrupted","refused"],"icon":"mdi:history",\#(Self.availability),\#(Self.device)}"#
        )
    }

    @Test func everyConfigRetainedAndUnique() {
        let messages = discovery.configMessages
        #expect(messages.allSatisfy { $0.retain })
        #expect(Set(messages.map(\.topic)).count == 3)
        #expect(
            discovery.will == OutgoingMessage(topic: "gate/garden_gate/availability", text: "offline", retain: true)
        )
        #expect(
            discovery.birth == OutgoingMessage(topic: "gate/garden_gate/availability", text: "online", retain: true)
        )
    }

    @Test func nameIsEscaped() {
        let named = HomeAssistantDiscovery(
            config: HomeAssistantConfig(nodeID: "g", name: "Tor \"Süd\""),
            mqtt: MQTTConfig(host: "b"),
            version: "1"
        )
        #expect(named.button.serialized().contains(#""name":"Tor \"Süd\"""#))
        #expect(named.topics.buttonConfig == "homeassistant/button/g/open/config")
    }

    @Test func removalEmptiesEveryRetainedTopic() {
        let removal = HomeAssistantDiscovery.removal(discovery.topics)
        #expect(removal.allSatisfy { $0.payload.isEmpty && $0.retain })
        #expect(
            removal.map(\.topic) == discovery.topics.discoveryConfigs + [
                "gate/garden_gate/last_opening", "gate/garden_gate/last_opening/attributes",
                "gate/garden_gate/availability",
            ]
        )
    }

    @Test func sensorFromTheStatusFile() {
        let last = StatusRecord.Last(
            outcome: .timeout,
            error: "operationTimeout",
            adapter: "mqtt",
            durationMs: 5000,
            finishedAt: "2026-11-21T10:00:00.123Z",
            source: "elsewhere"
        )
        let messages = discovery.lastOpeningMessages(LastOpeningState(last))
        #expect(
            messages.map(\.description) == [
                #"gate/garden_gate/last_opening/attributes {"adapter":"mqtt","duration_ms":5000,"source":"elsewhere","finished_at":"2026-11-21T10:00:00.123Z","error":"operationTimeout"} (retained)"#,
                "gate/garden_gate/last_opening timeout (retained)",
            ]
        )
    }

    @Test func refusedSensor() {
        let state = LastOpeningState.refused(
            source: "homeassistant",
            at: "2026-11-21T10:00:00.123Z",
            error: "operationInProgress"
        )
        #expect(state.outcome == "refused")
        #expect(
            state.attributes.serialized()
                == #"{"adapter":null,"duration_ms":0,"source":"homeassistant","finished_at":"2026-11-21T10:00:00.123Z","error":"operationInProgress"}"#
        )
    }
}
