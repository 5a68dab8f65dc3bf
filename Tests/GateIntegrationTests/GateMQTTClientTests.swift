import Foundation
import GateTestSupport
import Testing

/// gate open's one MQTT client (libmosquitto) over plain TCP: a password file, and
/// what it says about servers that are not the broker it expects.
@Suite("gate open's MQTT client over plain TCP", .serialized)
struct GateMQTTClientTests {
    private func config(broker: MosquittoBroker, udpPort: UInt16?, username: String? = nil) throws -> TestConfig {
        var text = udpPort.map { "[udp]\nhost = \"127.0.0.1\"\nport = \($0)\n" } ?? ""
        text += "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n"
        if let caFile = broker.caFile { text += "tls = true\nca_file = \"\(caFile)\"\n" }
        if let username { text += "username = \"\(username)\"\n" }
        return try TestConfig(text)
    }

    private func simulator(
        _ broker: MosquittoBroker,
        username: String? = nil,
        password: String? = nil
    ) throws -> Simulator {
        var arguments = ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)]
        if let caFile = broker.caFile { arguments += ["--mqtt-tls-ca", caFile] }
        if let username { arguments += ["--mqtt-username", username] }
        return try Simulator(arguments, environment: password.map { ["ESP32_SIM_MQTT_PASSWORD": $0] } ?? [:])
    }

    private func environment(password: String) throws -> [String: String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-credentials-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try (password + "\n").write(
            to: folder.appendingPathComponent("mqtt-password"),
            atomically: true,
            encoding: .utf8
        )
        return GateRunner.isolatedEnvironment(["CREDENTIALS_DIRECTORY": folder.path])
    }

    private func reason(_ run: GateRun) throws -> String {
        let attempts = try #require(try run.json()["attempts"] as? [[String: Any]])
        return attempts.first?["reason"] as? String ?? ""
    }

    @Test(
        "Plain TCP with a password file: the right password opens, a wrong one is 69 in the broker's words",
        arguments: [true, false]
    )
    func plainPassword(right: Bool) throws {
        let broker = try MosquittoBroker(.password(users: ["gate": "gate-pw-Lk3", "esp32": "esp32-pw-Vb8"]))
        let sim = try simulator(broker, username: "esp32", password: "esp32-pw-Vb8")
        let config = try config(broker: broker, udpPort: sim.udpPort, username: "gate")
        let password = right ? "gate-pw-Lk3" : "wrong-pw-Qz1"
        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: try environment(password: password)
        )
        #expect(!run.stdout.contains(password) && !run.stderr.contains(password))
        if right {
            #expect(run.status == 0, "\(run.summary)")
            #expect(try sim.activations().map(\.via) == ["mqtt"])
        } else {
            #expect(run.status == 69, "\(run.summary)")
            #expect(
                try reason(run)
                    == "MQTT broker at 127.0.0.1:\(broker.port) refused the connection: Connection Refused: not authorised."
            )
            #expect(try sim.activations().isEmpty)
        }
    }

    /// libmosquitto takes this CONNACK for a success and subscribes; the server never
    /// acknowledges, so nothing is published and the budget ends the attempt.
    @Test("A server that answers CONNECT with something else: 69, the broker named, nothing published")
    func notABroker() throws {
        let server = try SilentTCPListener()
        // A CONNACK five bytes long: what no MQTT 3.1.1 broker sends.
        server.answerFirstConnection(with: [0x20, 0x05, 0, 0, 0, 0, 0])
        let config = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\nport = \(server.port)\n")
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        #expect(try run.json()["error"] as? String == "mqttConnectionFailed")
        let words = try reason(run)
        #expect(words.contains("MQTT broker at 127.0.0.1:\(server.port)"), "\(words)")
        let attempts = try #require(try run.json()["attempts"] as? [[String: Any]])
        #expect(attempts.first?["trigger_sent"] as? Bool == false, "\(run.summary)")
    }

    @Test("Plain TCP to a TLS broker: 69 at once, saying that the broker speaks TLS")
    func plainToTLS() throws {
        let broker = try MosquittoBroker(.tls)
        let config = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n")
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let reason = try reason(run)
        #expect(
            reason
                == "the broker at 127.0.0.1:\(broker.port) expects TLS on this port (set tls = true in [mqtt], "
                + "or use its plain port)",
            "\(reason)"
        )
        #expect((try run.json()["duration_ms"] as? Int ?? 9999) < 5000, "not the whole budget")
    }
}
