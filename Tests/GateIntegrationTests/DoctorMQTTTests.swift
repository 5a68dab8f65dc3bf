import Foundation
import GateTestSupport
import Testing

private let triggerTopic = "iot/house/gate/esp32/trigger"

/// `[udp]` on a quiet loopback socket and `[mqtt]` at `port` (a broker's, by default).
private func doctorConfig(
    udpPort: UInt16,
    mqttPort: UInt16,
    username: String? = nil,
    caFile: String? = nil,
    timeout: Double? = nil
) throws -> TestConfig {
    var text = "[udp]\nhost = \"127.0.0.1\"\nport = \(udpPort)\n[mqtt]\nhost = \"127.0.0.1\"\nport = \(mqttPort)\n"
    if let caFile { text += "tls = true\nca_file = \"\(caFile)\"\n" }
    if let username { text += "username = \"\(username)\"\n" }
    if let timeout { text += "timeout = \(timeout)\n" }
    return try TestConfig(text)
}

/// A `$CREDENTIALS_DIRECTORY` holding `mqtt-password`, as systemd makes it.
private func credentials(_ password: String) throws -> [String: String] {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-credentials-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try (password + "\n").write(to: folder.appendingPathComponent("mqtt-password"), atomically: true, encoding: .utf8)
    return ["CREDENTIALS_DIRECTORY": folder.path]
}

/// Waits a moment for a stray publish to reach the recorder, then says whether any trigger came.
private func triggers(_ recorder: MQTTRecorder) -> [String] {
    Thread.sleep(forTimeInterval: 0.5)
    return recorder.messages(topic: triggerTopic)
}

/// `gate doctor` against a real mosquitto on loopback.
@Suite("gate doctor against a real broker", .serialized)
struct DoctorMQTTTests {
    @Test("Everything in place (TLS, password from systemd credentials): exit 0, every check listed, nothing sent")
    func allPass() throws {
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": "gate-pw-Doc7"]))
        let recorder = try MQTTRecorder(broker)
        let esp32 = try DoctorQuietESP32()
        let config = try doctorConfig(
            udpPort: esp32.port,
            mqttPort: broker.port,
            username: "gate",
            caFile: broker.caFile
        )
        let environment = GateRunner.isolatedEnvironment(try credentials("gate-pw-Doc7"))
        let doctor = try DoctorOutcome.run(config: config.path, environment: environment)
        #expect(doctor.run.status == 0, "\(doctor.run.summary)\n--- broker log\n\(broker.logText)")
        #expect(doctor.findings.map { $0["check"] as? String ?? "?" } == doctorChecks)
        for finding in doctor.findings {
            #expect(Set(finding.keys) == ["check", "status", "detail", "fix"], "\(finding)")
        }
        #expect(
            doctor.statuses == [
                "config": "ok", "runtime": "ok", "state": "ok", "daemon": "ok", "udp": "ok", "esp32": "skip",
                "v2": "skip",
                "mqtt-password": "ok", "mqtt-tcp": "ok", "mqtt-connect": "ok", "gpio": "skip", "homeassistant": "skip",
                "notify": "skip",
            ],
            "\(doctor.run.summary)"
        )
        #expect(doctor["mqtt-password"].detail.contains("systemd credentials"))
        #expect(doctor["mqtt-connect"].detail.contains("TLS handshake verified against \(broker.caFile!)"))
        #expect(doctor["gpio"].detail.contains("[button]"))
        #expect(!doctor.run.stdout.contains("gate-pw-Doc7") && !doctor.run.stderr.contains("gate-pw-Doc7"))
        #expect(triggers(recorder).isEmpty, "the doctor published a trigger")
        #expect(esp32.received() == 0, "the doctor sent something to the ESP32")
        // It logged in and said goodbye: a clean DISCONNECT, not a dropped socket.
        #expect(broker.logText.contains("u'gate'"), "\(broker.logText)")
        #expect(
            broker.logText.range(of: #"Client gate-[0-9a-f]{8} disconnected\."#, options: .regularExpression) != nil,
            "\(broker.logText)"
        )
    }

    @Test("Broker down: mqtt-tcp FAIL naming host:port with a hint, mqtt-connect skipped, exit 69")
    func brokerDown() throws {
        let broker = try MosquittoBroker(.plain)
        let esp32 = try DoctorQuietESP32()
        let config = try doctorConfig(udpPort: esp32.port, mqttPort: broker.port)
        broker.stop()
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 69, "\(doctor.run.summary)")
        let tcp = doctor["mqtt-tcp"]
        #expect(tcp.status == "fail")
        #expect(
            tcp.detail.contains("127.0.0.1:\(broker.port)") && tcp.detail.contains("Connection refused"),
            "\(tcp.detail)"
        )
        #expect(tcp.fix?.contains("mqtt.host / mqtt.port") == true)
        #expect(doctor["mqtt-connect"].status == "skip")
        #expect(doctor["mqtt-password"].status == "skip", "no username: nothing to look up")
    }

    @Test("Wrong password: mqtt-connect FAIL not authorised with the secret hint, exit 78, no trigger")
    func wrongPassword() throws {
        let broker = try MosquittoBroker(.password(users: ["gate": "right-pw-D1"]))
        let recorder = try MQTTRecorder(broker)
        let esp32 = try DoctorQuietESP32()
        let config = try doctorConfig(udpPort: esp32.port, mqttPort: broker.port, username: "gate")
        let environment = GateRunner.isolatedEnvironment(try credentials("wrong-pw-D2"))
        let doctor = try DoctorOutcome.run(config: config.path, environment: environment)
        #expect(doctor.run.status == 78, "\(doctor.run.summary)")
        #expect(doctor["mqtt-password"].status == "ok")
        let connect = doctor["mqtt-connect"]
        #expect(connect.status == "fail")
        #expect(connect.detail.lowercased().contains("not authori"), "\(connect.detail)")
        #expect(connect.fix?.contains("gate secret set mqtt-password") == true)
        #expect(!doctor.run.stdout.contains("wrong-pw-D2") && !doctor.run.stderr.contains("wrong-pw-D2"))
        #expect(triggers(recorder).isEmpty)
        #expect(esp32.received() == 0)
    }

    @Test("TLS with the wrong CA: mqtt-connect FAIL naming TLS and the certificate problem, exit 69, no trigger")
    func wrongCA() throws {
        let broker = try MosquittoBroker(.tls)
        let recorder = try MQTTRecorder(broker)
        let otherCA = try MosquittoBroker.makeUnrelatedCA(in: broker.directory)
        let esp32 = try DoctorQuietESP32()
        let config = try doctorConfig(udpPort: esp32.port, mqttPort: broker.port, caFile: otherCA)
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 69, "\(doctor.run.summary)")
        #expect(doctor["mqtt-tcp"].status == "ok")
        let connect = doctor["mqtt-connect"]
        #expect(connect.status == "fail")
        #expect(
            connect.detail.contains("TLS handshake") && connect.detail.contains("certificate verify failed"),
            "\(connect.detail)"
        )
        #expect(connect.fix?.contains(otherCA) == true)
        #expect(triggers(recorder).isEmpty)
    }

    @Test("A username without a password: mqtt-password FAIL with `gate secret set`, login not tried, exit 78")
    func missingPassword() throws {
        let broker = try MosquittoBroker(.password(users: ["gate": "pw-D3"]))
        let esp32 = try DoctorQuietESP32()
        let config = try doctorConfig(udpPort: esp32.port, mqttPort: broker.port, username: "gate")
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 78, "\(doctor.run.summary)")
        let password = doctor["mqtt-password"]
        #expect(password.status == "fail")
        #expect(password.detail.contains("mqtt.username is gate but no MQTT password was found"), "\(password.detail)")
        #expect(password.fix?.contains("gate secret set mqtt-password") == true)
        #expect(doctor["mqtt-tcp"].status == "ok")
        #expect(doctor["mqtt-connect"].status == "skip")
        #expect(!broker.logText.contains("u'gate'"), "the doctor tried a login without a password")
    }

    @Test(
        "A port that accepts TCP but never answers: mqtt-connect FAIL within the mqtt.timeout budget",
        arguments: [false, true]
    )
    func silentBroker(tls: Bool) throws {
        let silent = try SilentTCPListener()
        let esp32 = try DoctorQuietESP32()
        let caFile = tls ? try MosquittoBroker.makeUnrelatedCA(in: URL(fileURLWithPath: NSTemporaryDirectory())) : nil
        let config = try doctorConfig(udpPort: esp32.port, mqttPort: silent.port, caFile: caFile, timeout: 1.0)
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 69, "\(doctor.run.summary)")
        #expect(doctor["mqtt-tcp"].status == "ok")
        #expect(doctor["mqtt-connect"].status == "fail")
        #expect(doctor["mqtt-connect"].detail.contains("within 1.0 s"), "\(doctor["mqtt-connect"].detail)")
        #expect(doctor.run.wall < .seconds(5), "took \(doctor.run.wall)")
    }
}
