import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

// docs/CONTRACT.md#home-assistant against a real loopback mosquitto, the simulator and `gate daemon`: what a
// Home Assistant would see on the broker, and what its button does.

private let command = "gate/garden_gate/open"
private let availability = "gate/garden_gate/availability"
private let lastOpening = "gate/garden_gate/last_opening"
private let attributes = "gate/garden_gate/last_opening/attributes"
private let configTopics = [
    "homeassistant/button/garden_gate/open/config",
    "homeassistant/binary_sensor/garden_gate/relay/config",
    "homeassistant/sensor/garden_gate/last_opening/config",
]

private let device =
    #""device":{"identifiers":["gate_garden_gate"],"name":"Garden gate","manufacturer":"gate","model":"ESP32 relay (UDP, MQTT)","sw_version":"0.1.0"},"origin":{"name":"gate","sw_version":"0.1.0"}"#
private let availabilityMembers =
    #""availability_topic":"gate/garden_gate/availability","payload_available":"online","payload_not_available":"offline""#
/// The exact retained discovery configs (docs/CONTRACT.md#home-assistant), by topic.
private let expectedConfigs = [
    configTopics[0]:
        #"{"name":"Open","unique_id":"garden_gate_open","object_id":"garden_gate_open","command_topic":"gate/garden_gate/open","payload_press":"PRESS","retain":false,"qos":0,"icon":"mdi:gate-open",\#(availabilityMembers),\#(device)}"#,
    configTopics[1]:
        #"{"name":"Relay","unique_id":"garden_gate_relay","object_id":"garden_gate_relay","state_topic":"iot/house/gate/esp32/status","payload_on":"1","payload_off":"0","icon":"mdi:electric-switch",\#(availabilityMembers),\#(device)}"#,
    configTopics[2]:
        #"{"name":"Last opening","unique_id":"garden_gate_last_opening","object_id":"garden_gate_last_opening","state_topic":"gate/garden_gate/last_opening","json_attributes_topic":"gate/garden_gate/last_opening/attributes","device_class":"enum","options":["success","timeout","error","interrupted","refused"],"icon":"mdi:history",\#(availabilityMembers),\#(device)}"#,
]

/// What a subscriber arriving now gets from the broker's retained store, by topic.
private func retained(
    _ broker: MosquittoBroker,
    filter: String = "#",
    credentials: MosquittoBroker.Credentials = .brokerDefault
) throws -> [String: String] {
    let recorder = try MQTTRecorder(broker, topic: filter, credentials: credentials)
    defer { recorder.stop() }
    var found: [String: String] = [:]
    for message in recorder.received where message.retained { found[message.topic] = message.text }
    return found
}

/// Waits until the retained value of `topic` is `value` (nil: no retained message).
private func waitForRetained(
    _ broker: MosquittoBroker,
    _ topic: String,
    _ value: String?,
    timeout: Duration = .seconds(15)
) throws -> Bool {
    try waitUntil(timeout) { try retained(broker, filter: topic)[topic] == value }
}

private func haConfig(
    sim: Simulator,
    broker: MosquittoBroker,
    cooldown: Double,
    extra: String = "[homeassistant]\n"
) -> String {
    daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: cooldown, extra: extra)
}

extension DaemonTests {
    @Suite("Home Assistant over MQTT discovery (docs/CONTRACT.md#home-assistant)")
    struct HomeAssistant {
        @Test(
            "A retained command, left before the start or published while subscribed, never triggers; the discovery configs are retained and exact; online"
        )
        func retainedCommandAndDiscovery() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            try broker.publish(topic: command, payload: "PRESS", retained: true)
            let config = try TestConfig(haConfig(sim: sim, broker: broker, cooldown: 0))
            let daemon = try DaemonProcess(
                config: config.path,
                environment: GateRunner.isolatedEnvironment(),
                buttonFIFO: false
            )
            try daemon.waitForReady()
            #expect(daemon.waitForLog("Home Assistant command refused: the command was retained"), "\(daemon.log)")
            #expect(daemon.waitForLog("Home Assistant device announced"), "\(daemon.log)")
            // The refusal is logged before its sensor state reaches the broker.
            #expect(try waitForRetained(broker, lastOpening, "refused"), "\(daemon.log)")

            let seen = try retained(broker)
            for topic in configTopics {
                #expect(seen[topic] == expectedConfigs[topic], "\(topic): \(seen[topic] ?? "nothing")")
            }
            #expect(seen[availability] == "online")
            #expect(seen[lastOpening] == "refused", "\(seen)")
            #expect(seen[attributes]?.contains(#""source":"homeassistant""#) == true)
            #expect(seen[attributes]?.contains(#""error":"retainedCommand""#) == true)
            // Published retained while the daemon is subscribed: MQTT 3.1.1 would deliver it
            // without its retain flag; the link's MQTT 5 "retain as published" keeps it.
            #expect(daemon.waitForLog("MQTT link up"), "\(daemon.log)")
            try broker.publish(topic: command, payload: "PRESS", retained: true)
            #expect(
                daemon.waitForLog("Home Assistant command refused: the command was retained", count: 2),
                "\(daemon.log)"
            )
            Thread.sleep(forTimeInterval: 1)
            #expect(try sim.activations().isEmpty, "a retained command must never trigger")
            #expect(try daemon.history().isEmpty)
            #expect(daemon.logLines(containing: "Home Assistant button pressed").isEmpty, "\(daemon.log)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "A press opens once through the pipeline (sensor success, history); one in the cooldown is refused; a CLI opening shows too"
        )
        func pressAndCooldown() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            let config = try TestConfig(haConfig(sim: sim, broker: broker, cooldown: 30))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("Home Assistant device announced"), "\(daemon.log)")
            #expect(daemon.waitForLog("MQTT link up"), "\(daemon.log)")
            let recorder = try MQTTRecorder(broker, topic: "gate/#")

            try broker.publish(topic: command, payload: "PRESS", qos: 0)
            #expect(
                recorder.waitForMessages(topic: lastOpening, count: 1, within: .seconds(15)) == ["success"],
                "\(recorder.received)\n\(daemon.log)"
            )
            #expect(try sim.activations().count == 1, "exactly one activation")
            let attributesText = recorder.messages(topic: attributes).last ?? ""
            #expect(
                attributesText.contains(#""source":"homeassistant""#) && attributesText.contains(#""error":null"#),
                "\(attributesText)"
            )
            #expect(attributesText.contains(#""adapter":"udp""#), "\(attributesText)")
            #expect(DaemonFiles.last(daemon.status())?["source"] as? String == "homeassistant")
            #expect(try daemon.history().map { $0["source"] as? String } == ["homeassistant"])

            // Inside the 30 s cooldown: refused, nothing sent, never queued.
            try broker.publish(topic: command, payload: "PRESS", qos: 0)
            #expect(
                recorder.waitForMessages(topic: lastOpening, count: 2) == ["success", "refused"],
                "\(recorder.received)\n\(daemon.log)"
            )
            #expect(daemon.waitForLog("Home Assistant command refused: cooldown"), "\(daemon.log)")
            Thread.sleep(forTimeInterval: 1)
            #expect(try sim.activations().count == 1, "the refused press sent nothing")
            #expect(try daemon.history().count == 1)

            // Another opener (the CLI, --force past the cooldown) shows in the sensor as well.
            let run = try GateRunner.run(
                ["open", "--config", config.path, "--force", "--json"],
                environment: environment
            )
            #expect(run.status == 0, "\(run.summary)")
            #expect(
                recorder.waitForMessages(topic: lastOpening, count: 3) == ["success", "refused", "success"],
                "\(recorder.received)\n\(daemon.log)"
            )
            #expect(
                recorder.messages(topic: attributes).last?.contains(#""source":"cli""#) == true,
                "\(recorder.received)"
            )
            #expect(try sim.activations().count == 2)

            // Another MQTT client (the phone app) triggers the relay: recorded as elsewhere, shown too.
            // (A relay 1 within 1 s of a local opening's end is its echo: waited out first.)
            Thread.sleep(forTimeInterval: 1.5)
            try broker.publish(
                topic: "iot/house/gate/esp32/trigger",
                payload: String(Int(Date().timeIntervalSince1970)),
                qos: 0
            )
            #expect(
                recorder.waitForMessages(topic: lastOpening, count: 4, within: .seconds(15)) == [
                    "success", "refused", "success", "success",
                ],
                "\(recorder.received)\n\(daemon.log)"
            )
            #expect(
                recorder.messages(topic: attributes).last?.contains(#""source":"elsewhere""#) == true,
                "\(recorder.received)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "Availability: offline by the last will when the daemon is killed, online after a restart, offline after SIGTERM"
        )
        func availabilityWill() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            let config = try TestConfig(haConfig(sim: sim, broker: broker, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let first = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try first.waitForReady()
            #expect(try waitForRetained(broker, availability, "online"), "\(first.log)")

            kill(first.pid, SIGKILL)
            _ = first.waitForExit()
            // The broker publishes the will once it notices the dead connection (a closed socket: at once).
            #expect(try waitForRetained(broker, availability, "offline"), "\(broker.logText)")

            let second = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try second.waitForReady()
            #expect(try waitForRetained(broker, availability, "online"), "\(second.log)")
            #expect(second.stop() == .exited(0), "\(second.log)")
            #expect(
                try waitForRetained(broker, availability, "offline"),
                "a clean stop says offline itself (no will then)"
            )
        }

        @Test("Home Assistant's birth (online on homeassistant/status) makes the daemon announce the device again")
        func birthReannounces() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            let config = try TestConfig(haConfig(sim: sim, broker: broker, cooldown: 0))
            let daemon = try DaemonProcess(
                config: config.path,
                environment: GateRunner.isolatedEnvironment(),
                buttonFIFO: false
            )
            try daemon.waitForReady()
            #expect(daemon.waitForLog("Home Assistant device announced"), "\(daemon.log)")
            let recorder = try MQTTRecorder(broker, topic: "homeassistant/button/#")
            try broker.publish(topic: "homeassistant/status", payload: "online", qos: 0)
            #expect(daemon.waitForLog("Home Assistant is online; announcing the device again"), "\(daemon.log)")
            let again = recorder.received.filter { !$0.retained }
            #expect(waitUntil { recorder.received.filter { !$0.retained }.count >= 1 }, "\(again)")
            #expect(recorder.received.last?.text == expectedConfigs[configTopics[0]])
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("Removing [homeassistant] and reloading deletes the device; `gate homeassistant remove` does too")
        func removal() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            let config = try TestConfig(haConfig(sim: sim, broker: broker, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            #expect(try waitForRetained(broker, configTopics[0], expectedConfigs[configTopics[0]]), "\(daemon.log)")

            try haConfig(sim: sim, broker: broker, cooldown: 0, extra: "").write(
                toFile: config.path,
                atomically: true,
                encoding: .utf8
            )
            daemon.send(SIGHUP)
            #expect(daemon.waitForLog("configuration reloaded; changed: homeassistant (removed)"), "\(daemon.log)")
            #expect(daemon.waitForLog("Home Assistant device removed"), "\(daemon.log)")
            var left: [String: String] = [:]
            let cleared = try waitUntil {
                left = try retained(broker).filter { $0.key.hasPrefix("homeassistant/") || $0.key.hasPrefix("gate/") }
                return left.isEmpty
            }
            #expect(cleared, "left: \(left)\n\(daemon.log)\n--- broker\n\(broker.logText)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")

            // Announced again by a daemon with the table, then removed from the command line.
            try haConfig(sim: sim, broker: broker, cooldown: 0).write(
                toFile: config.path,
                atomically: true,
                encoding: .utf8
            )
            let again = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try again.waitForReady()
            #expect(try waitForRetained(broker, configTopics[2], expectedConfigs[configTopics[2]]), "\(again.log)")
            #expect(again.stop() == .exited(0), "\(again.log)")
            let run = try GateRunner.run(
                ["homeassistant", "remove", "--config", config.path],
                environment: environment
            )
            #expect(run.status == 0, "\(run.summary)")
            #expect(run.stdout.contains("Removed the Home Assistant device garden_gate"), "\(run.summary)")
            let remaining = try retained(broker)
            #expect(
                remaining.keys.filter { $0.hasPrefix("homeassistant/") || $0.hasPrefix("gate/") }.isEmpty,
                "\(remaining)"
            )
        }

        @Test("gate config check explains [homeassistant], config show writes it out, a table without [mqtt] exits 78")
        func configCommands() throws {
            let config = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\n[homeassistant]\nnode_id = \"front\"\n")
            let check = try GateRunner.run(["config", "check", "--config", config.path])
            #expect(check.status == 0, "\(check.summary)")
            #expect(
                check.stdout.contains(
                    #"homeassistant: device "Garden gate" (node front), discovery under homeassistant/, button on gate/front/open"#
                ),
                "\(check.summary)"
            )
            let show = try GateRunner.run(["config", "show", "--config", config.path])
            #expect(
                show.stdout.contains(
                    "[homeassistant]\ndiscovery_prefix = \"homeassistant\"\nnode_id = \"front\"\nname = \"Garden gate\"\n"
                ),
                "\(show.summary)"
            )
            let alone = try TestConfig("[udp]\nhost = \"127.0.0.1\"\n[homeassistant]\n")
            let refused = try GateRunner.run(["config", "check", "--config", alone.path])
            #expect(refused.status == 78, "\(refused.summary)")
            #expect(refused.stderr.contains("[homeassistant] needs [mqtt]"), "\(refused.summary)")
        }

        @Test(
            "With the deploy ACL, only Home Assistant's user can open through the command topic; gate doctor checks the table"
        )
        func aclKeepsOthersOut() throws {
            let acl = try String(
                contentsOf: repositoryRoot().appendingPathComponent("deploy/homeassistant/mosquitto.acl"),
                encoding: .utf8
            )
            // The fixture's recorders prove their subscription with marker messages: let everyone have those.
            let aclFile = FileManager.default.temporaryDirectory.appendingPathComponent(
                "gate-ha-acl-\(UUID().uuidString)"
            )
            try (acl + "\npattern readwrite \(MQTTRecorder.markerPrefix)#\n").write(
                to: aclFile,
                atomically: true,
                encoding: .utf8
            )
            defer { try? FileManager.default.removeItem(at: aclFile) }
            let broker = try MosquittoBroker(
                .password(users: ["gate": "gatepw", "homeassistant": "hapw", "esp32": "esppw", "phone": "phonepw"]),
                aclFile: aclFile.path
            )
            let sim = try Simulator(
                ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port), "--mqtt-username", "esp32"],
                environment: ["ESP32_SIM_MQTT_PASSWORD": "esppw"]
            )
            let credentials = FileManager.default.temporaryDirectory.appendingPathComponent(
                "gate-cred-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: credentials) }
            try "gatepw".write(
                to: credentials.appendingPathComponent("mqtt-password"),
                atomically: true,
                encoding: .utf8
            )
            let environment = GateRunner.isolatedEnvironment(["CREDENTIALS_DIRECTORY": credentials.path])
            let config = try TestConfig(
                daemonConfigText(
                    udpPort: sim.udpPort,
                    mqttPort: nil,
                    cooldown: 0,
                    extra: """
                        [mqtt]
                        host = "127.0.0.1"
                        port = \(broker.port)
                        username = "gate"
                        [homeassistant]

                        """
                )
            )
            let doctor = try GateRunner.run(["doctor", "--config", config.path, "--json"], environment: environment)
            #expect(doctor.stdout.contains(#"{"check":"homeassistant","status":"ok""#), "\(doctor.summary)")

            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("Home Assistant device announced"), "\(daemon.log)")
            #expect(daemon.waitForLog("MQTT link up"), "\(daemon.log)")
            let seen = try retained(broker, credentials: .user("homeassistant", password: "hapw"))
            #expect(seen[configTopics[0]] == expectedConfigs[configTopics[0]], "\(seen)\n\(broker.logText)")

            // Another authenticated client: mosquitto drops its publish (the ACL), so nothing opens.
            try broker.publish(
                topic: command,
                payload: "PRESS",
                qos: 1,
                credentials: .user("phone", password: "phonepw")
            )
            try broker.publish(topic: command, payload: "PRESS", qos: 1, credentials: .user("gate", password: "gatepw"))
            Thread.sleep(forTimeInterval: 2)
            #expect(try sim.activations().isEmpty, "\(daemon.log)")
            #expect(daemon.logLines(containing: "Home Assistant button pressed").isEmpty, "\(daemon.log)")

            // Home Assistant's user may.
            try broker.publish(
                topic: command,
                payload: "PRESS",
                qos: 1,
                credentials: .user("homeassistant", password: "hapw")
            )
            #expect(waitUntil { (try? sim.activations().count) == 1 }, "\(daemon.log)")
            #expect(
                waitUntil { DaemonFiles.last(daemon.status())?["source"] as? String == "homeassistant" },
                "\(daemon.log)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }
    }
}

/// The clone's root, from this file's place in it.
private func repositoryRoot() -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}
