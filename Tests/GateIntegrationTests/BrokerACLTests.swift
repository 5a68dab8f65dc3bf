import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let triggerTopic = "iot/house/gate/esp32/trigger"
private let statusTopic = "iot/house/gate/esp32/status"

/// deploy/mosquitto/gate.acl on a real broker with a password file (issue 18): a client
/// outside the ACL can neither forge a relay `1` nor trigger the relay.
@Suite("deploy/mosquitto/gate.acl on a real broker")
struct BrokerACLTests {
    @Test(
        "A user outside the ACL cannot forge a 1 (the daemon sees nothing) nor publish a trigger (the relay never cycles)"
    )
    func intruderCannotForgeOrTrigger() throws {
        let acl = try Deploy.file("mosquitto/gate.acl").path
        let users = [
            "esp32": "esp32-pw-Q7", "gate": "gate-pw-M2", "gate-desktop": "desk-pw-R4", "intruder": "intr-pw-Z9",
        ]
        let broker = try MosquittoBroker(.password(users: users), aclFile: acl)
        let sim = try Simulator(
            ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port), "--mqtt-username", "esp32"],
            environment: ["ESP32_SIM_MQTT_PASSWORD": users["esp32"]!]
        )
        #expect(waitUntil { sim.stderrText.contains("subscribed to \(triggerTopic)") }, "\(sim.stderrText)")

        let credentials = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-credentials-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try (users["gate"]! + "\n").write(
            to: credentials.appendingPathComponent("mqtt-password"),
            atomically: true,
            encoding: .utf8
        )
        defer { try? FileManager.default.removeItem(at: credentials) }
        let config = try TestConfig(
            daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port)
                + "username = \"gate\"\n[runtime]\ncooldown = 0\n"
        )
        let environment = GateRunner.isolatedEnvironment(["CREDENTIALS_DIRECTORY": credentials.path])
        let daemon = try DaemonProcess(config: config.path, environment: environment)
        try daemon.waitForReady()
        #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)\n--- broker\n\(broker.logText)")

        // The intruder has a valid password but no line in the ACL: the broker accepts its
        // publishes (QoS 1 is acknowledged) and drops them.
        let intruder = MosquittoBroker.Credentials.user("intruder", password: users["intruder"]!)
        for payload in ["1", "1"] {
            let run = try broker.runPublish(topic: statusTopic, payload: payload, credentials: intruder)
            #expect(run.status == 0, "\(run.summary)")
        }
        let trigger = try broker.runPublish(
            topic: triggerTopic,
            payload: String(Int(Date().timeIntervalSince1970)),
            credentials: intruder
        )
        #expect(trigger.status == 0, "\(trigger.summary)")
        // Anonymous clients are refused outright.
        #expect(try broker.runPublish(topic: statusTopic, payload: "1", credentials: .anonymous).status == 5)

        // Nothing reaches the daemon or the relay (a publish allowed through arrives in
        // milliseconds on loopback; 2 s is generous).
        Thread.sleep(forTimeInterval: 2)
        #expect(daemon.logLines(containing: "relay activated by someone else").isEmpty, "\(daemon.log)")
        #expect(try sim.activations().isEmpty, "\(sim.stderrText)")
        #expect(daemon.status()?["state"] as? String ?? "ready" == "ready", "\(String(describing: daemon.status()))")

        // The control: gate's desktop user may trigger; the ESP32's 1 and 0 reach the daemon.
        // Messages are delivered in order, so once this cycle is recorded the intruder's
        // messages, published before, would have been seen.
        try broker.publish(
            topic: triggerTopic,
            payload: String(Int(Date().timeIntervalSince1970)),
            credentials: .user("gate-desktop", password: users["gate-desktop"]!)
        )
        #expect(
            daemon.waitForLog("relay cycle confirmed, caused elsewhere"),
            "\(daemon.log)\n--- broker\n\(broker.logText)"
        )
        Thread.sleep(forTimeInterval: 0.5)
        #expect(daemon.logLines(containing: "relay activated by someone else").count == 1, "\(daemon.log)")
        #expect(daemon.logLines(containing: "never reported").isEmpty, "\(daemon.log)")
        #expect(try sim.activations().count == 1, "only the desktop user's trigger cycled the relay")
        let history = try daemon.history()
        #expect(history.map { $0["outcome"] as? String } == ["success"], "\(history)")
        #expect(broker.logText.contains("Denied PUBLISH from"), "\(broker.logText)")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("deploy/mosquitto/gate.conf loads in the real mosquitto and the broker runs (a misspelt key would stop it)")
    func brokerConfigurationLoads() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-mosquitto-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let passwords = folder.appendingPathComponent("gate.passwd").path
        let passwd = try MosquittoBroker.runTool(
            "/usr/bin/mosquitto_passwd",
            ["-c", "-b", passwords, "gate", "gate-pw"]
        )
        #expect(passwd.status == 0, "\(passwd.stderr)")
        let acl = folder.appendingPathComponent("gate.acl").path
        try FileManager.default.copyItem(atPath: try Deploy.file("mosquitto/gate.acl").path, toPath: acl)
        let port = try LoopbackSocket(.tcp).port
        // The shipped file as it is, but for where its files are and the port: a test
        // broker on loopback, as root (mosquitto drops to its own user otherwise).
        let shipped = try String(contentsOf: Deploy.file("mosquitto/gate.conf"), encoding: .utf8)
        let config =
            shipped
            .replacingOccurrences(of: "/etc/mosquitto/gate.passwd", with: passwords)
            .replacingOccurrences(of: "/etc/mosquitto/gate.acl", with: acl)
            .replacingOccurrences(of: "listener 1883", with: "listener \(port) 127.0.0.1")
            + "user root\n"
        #expect(config != shipped + "user root\n", "the paths or the listener of gate.conf changed: update this test")
        let path = folder.appendingPathComponent("gate.conf")
        try config.write(to: path, atomically: true, encoding: .utf8)
        let log = folder.appendingPathComponent("mosquitto.log")
        let broker = try MosquittoBroker.Child(
            MosquittoBroker.mosquitto,
            ["-c", path.path],
            stdout: log,
            stderr: log,
            watchdog: true
        )
        let exited = broker.waitForExit(within: .seconds(2))
        broker.terminate(grace: .seconds(2))
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(!exited, "mosquitto stopped on deploy/mosquitto/gate.conf: \(text)")
    }
}
