import Foundation
import Testing

/// Which MQTT client an opening uses: its own over plain TCP (no libmosquitto,
/// libssl or libcrypto to load), libmosquitto over TLS; and what the plain client
/// says about brokers that are not what it expects.
@Suite("gate open's MQTT clients: plain TCP and TLS", .serialized)
struct GateMQTTClientTests {
    private func config(broker: MosquittoBroker, udpPort: UInt16?, username: String? = nil) throws -> TestConfig {
        var text = udpPort.map { "[udp]\nhost = \"127.0.0.1\"\nport = \($0)\n" } ?? ""
        text += "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n"
        if let caFile = broker.caFile { text += "tls = true\nca_file = \"\(caFile)\"\n" }
        if let username { text += "username = \"\(username)\"\n" }
        return try TestConfig(text)
    }

    private func simulator(_ broker: MosquittoBroker, username: String? = nil, password: String? = nil) throws -> Simulator {
        var arguments = ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)]
        if let caFile = broker.caFile { arguments += ["--mqtt-tls-ca", caFile] }
        if let username { arguments += ["--mqtt-username", username] }
        return try Simulator(arguments, environment: password.map { ["ESP32_SIM_MQTT_PASSWORD": $0] } ?? [:])
    }

    private func environment(password: String) throws -> [String: String] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try (password + "\n").write(to: folder.appendingPathComponent("mqtt-password"), atomically: true, encoding: .utf8)
        return GateRunner.isolatedEnvironment(["CREDENTIALS_DIRECTORY": folder.path])
    }

    private func reason(_ run: GateRun) throws -> String {
        let attempts = try #require(try run.json()["attempts"] as? [[String: Any]])
        return attempts.first?["reason"] as? String ?? ""
    }

    @Test("Plain TCP with a password file: the right password opens, a wrong one is 69 in the broker's words", arguments: [true, false])
    func plainPassword(right: Bool) throws {
        let broker = try MosquittoBroker(.password(users: ["gate": "gate-pw-Lk3", "esp32": "esp32-pw-Vb8"]))
        let sim = try simulator(broker, username: "esp32", password: "esp32-pw-Vb8")
        let config = try config(broker: broker, udpPort: sim.udpPort, username: "gate")
        let password = right ? "gate-pw-Lk3" : "wrong-pw-Qz1"
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path], environment: try environment(password: password))
        #expect(!run.stdout.contains(password) && !run.stderr.contains(password))
        if right {
            #expect(run.status == 0, "\(run.summary)")
            #expect(try sim.activations().map(\.via) == ["mqtt"])
        } else {
            #expect(run.status == 69, "\(run.summary)")
            #expect(try reason(run) == "MQTT broker at 127.0.0.1:\(broker.port) refused the connection: Connection Refused: not authorised.")
            #expect(try sim.activations().isEmpty)
        }
    }

    /// The dynamic loader's own record (LD_DEBUG=files) of every library mapped,
    /// `dlopen` included: what the plain client exists for is that none of these is.
    @Test("Plain TCP loads neither libmosquitto nor libssl nor libcrypto; TLS loads them", arguments: [false, true])
    func librariesLoaded(tls: Bool) throws {
        let broker = try MosquittoBroker(tls ? .tls : .plain)
        let sim = try simulator(broker)
        let config = try config(broker: broker, udpPort: sim.udpPort)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-ld-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var environment = GateRunner.isolatedEnvironment()
        environment["LD_DEBUG"] = "files"
        environment["LD_DEBUG_OUTPUT"] = folder.appendingPathComponent("ld").path
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path], environment: environment)
        #expect(run.status == 0, "\(run.summary)")
        let records = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        try #require(records.count == 1, "one record, of gate's process: \(records)")
        let loaded = try String(contentsOf: folder.appendingPathComponent(records[0]), encoding: .utf8)
        try #require(loaded.contains("file=libc.so.6"), "the record lists what was loaded")
        for library in ["libmosquitto.so.1", "libssl.so.3", "libcrypto.so.3"] {
            #expect(loaded.contains("file=\(library)") == tls, "\(library) loaded: \(!tls)")
        }
    }

    @Test("A server that answers CONNECT with something else: 69 at once, the packet named")
    func notABroker() throws {
        let server = try SilentTCPListener()
        // A CONNACK five bytes long: what no MQTT 3.1.1 broker sends.
        server.answerFirstConnection(with: [0x20, 0x05, 0, 0, 0, 0, 0])
        let config = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\nport = \(server.port)\n")
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        #expect(try run.json()["error"] as? String == "mqttConnectionFailed")
        #expect(try reason(run) == "cannot reach MQTT broker at 127.0.0.1:\(server.port): the broker sent a CONNACK of 5 bytes instead of 2, which is not MQTT 3.1.1")
        #expect((try run.json()["duration_ms"] as? Int ?? 9999) < 5000, "not the whole budget")
    }

    @Test("Plain TCP to a TLS broker: 69 at once, saying that the broker speaks TLS")
    func plainToTLS() throws {
        let broker = try MosquittoBroker(.tls)
        let config = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n")
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let reason = try reason(run)
        #expect(reason.hasPrefix("cannot reach MQTT broker at 127.0.0.1:\(broker.port): "), "\(reason)")
        #expect(reason.hasSuffix("before any answer (if the broker expects TLS, set tls = true in [mqtt])"), "\(reason)")
        #expect((try run.json()["duration_ms"] as? Int ?? 9999) < 5000, "not the whole budget")
    }
}
