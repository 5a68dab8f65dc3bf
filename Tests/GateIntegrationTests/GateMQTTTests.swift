import Foundation
import GateTestSupport
import Testing

private let triggerTopic = "iot/house/gate/esp32/trigger"
private let statusTopic = "iot/house/gate/esp32/status"

/// A gate configuration for a simulator behind a broker.
private func mqttConfig(
    udpPort: UInt16?,
    broker: MosquittoBroker,
    username: String? = nil,
    caFile: String? = nil
) throws -> TestConfig {
    var text = ""
    if let udpPort {
        text += "[udp]\nhost = \"127.0.0.1\"\nport = \(udpPort)\n"
    }
    text += "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n"
    if let caFile {
        text += "tls = true\nca_file = \"\(caFile)\"\n"
    }
    if let username {
        text += "username = \"\(username)\"\n"
    }
    return try TestConfig(text)
}

/// The simulator's MQTT options for a broker.
private func simMQTT(_ broker: MosquittoBroker, username: String? = nil) -> [String] {
    var arguments = ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)]
    if let caFile = broker.caFile { arguments += ["--mqtt-tls-ca", caFile] }
    if let username { arguments += ["--mqtt-username", username] }
    return arguments
}

/// A `$CREDENTIALS_DIRECTORY` holding `mqtt-password`, as systemd makes it.
private func credentialsDirectory(password: String) throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-credentials-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try (password + "\n").write(to: folder.appendingPathComponent("mqtt-password"), atomically: true, encoding: .utf8)
    return folder.path
}

private func attempts(_ run: GateRun) throws -> [[String: Any]] {
    try #require(try run.json()["attempts"] as? [[String: Any]])
}

/// The real `gate` against the real simulator through a real mosquitto broker.
@Suite("gate open over MQTT through a real broker", .serialized)
struct GateMQTTTests {
    @Test("--via mqtt: a confirmed cycle through the broker, one activation")
    func viaMQTT() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(simMQTT(broker))
        let config = try mqttConfig(udpPort: sim.udpPort, broker: broker)
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 0, "\(run.summary)")
        let json = try run.json()
        #expect(json["adapter"] as? String == "mqtt")
        #expect((json["duration_ms"] as? Int ?? 0) >= 400)
        let activations = try sim.activations()
        #expect(activations.count == 1)
        #expect(activations.first?.via == "mqtt")
    }

    @Test(
        "--via mqtt ends its session with a DISCONNECT once the cycle is confirmed, not by the process's exit closing the socket",
        arguments: [false, true]
    )
    func disconnectsCleanly(tls: Bool) throws {
        let broker = try MosquittoBroker(tls ? .tls : .plain)
        let sim = try Simulator(simMQTT(broker))
        let config = try mqttConfig(udpPort: sim.udpPort, broker: broker, caFile: broker.caFile)
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 0, "\(run.summary)")
        // mosquitto logs "Client <id> disconnected." for a DISCONNECT packet and
        // "Client <id> closed its connection." for a socket closed without one.
        let clientLine = try #require(
            broker.logText.split(separator: "\n").first {
                $0.contains("New client connected") && $0.contains(" as gate-")
            },
            "gate's client never connected:\n\(broker.logText)"
        )
        let clientID = try #require(clientLine.split(separator: " ").last { $0.hasPrefix("gate-") })
        var ending: Substring?
        for _ in 0..<100 {
            ending = broker.logText.split(separator: "\n").first {
                $0.contains("Client \(clientID) ")
                    && ($0.contains("disconnected") || $0.contains("closed its connection"))
            }
            if ending != nil { break }
            usleep(50_000)
        }
        #expect(
            ending?.hasSuffix("Client \(clientID) disconnected.") == true,
            "\(ending ?? "no end")\n\(broker.logText)"
        )
        #expect(try sim.activations().count == 1)
    }

    @Test("Nothing listens on UDP: fallback to MQTT at once (ICMP port unreachable)")
    func fallbackWhenUDPClosed() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(simMQTT(broker) + ["--fault", "udp-off"])
        let config = try mqttConfig(udpPort: try freeUDPPort(), broker: broker)
        let run = try GateRunner.run(["open", "--json", "--config", config.path])
        #expect(run.status == 0, "\(run.summary)")
        let tried = try attempts(run)
        #expect(tried.map { $0["adapter"] as? String } == ["udp", "mqtt"])
        #expect(tried[0]["outcome"] as? String == "unreachable")
        #expect((tried[0]["duration_ms"] as? Int ?? 9999) < 2000, "the refusal must not wait for the UDP budget")
        #expect(tried[1]["outcome"] as? String == "success")
        #expect(try run.json()["adapter"] as? String == "mqtt")
        #expect(try sim.activations().map(\.via) == ["mqtt"])
    }

    /// The datagram never reaches the ESP32 (a socket that reads nothing stands where
    /// `udp.host` points); the status topic, watched from before the trigger, stays
    /// silent: the trigger was lost, and MQTT goes (docs/CONTRACT.md#evidence-and-time).
    @Test("UDP lost under a live watch: fallback to MQTT after the 2 s budget")
    func fallbackWhenUDPSilent() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(simMQTT(broker) + ["--fault", "udp-off"])
        let blackHole = try FakeESP32()
        let config = try mqttConfig(udpPort: blackHole.port, broker: broker)
        let run = try GateRunner.run(["open", "--json", "--config", config.path])
        #expect(run.status == 0, "\(run.summary)")
        let tried = try attempts(run)
        try #require(tried.count == 2, "\(run.stdout)")
        #expect(tried[0]["outcome"] as? String == "no_answer")
        #expect((tried[0]["duration_ms"] as? Int ?? 0) >= 2000)
        #expect(tried[1]["outcome"] as? String == "success")
        #expect(try sim.activations().map(\.via) == ["mqtt"])
    }

    /// Over TLS too: the one-shot exchange is the same, its client is libmosquitto there.
    @Test(
        "A retained stale 1 with a silent device: no_answer after the published trigger (124), never a success",
        arguments: [false, true]
    )
    func retainedStaleStatus(tls: Bool) throws {
        let broker = try MosquittoBroker(tls ? .tls : .plain)
        let sim = try Simulator(simMQTT(broker) + ["--fault", "mqtt:silent"])
        try broker.publish(topic: statusTopic, payload: "1", retained: true)
        let config = try mqttConfig(udpPort: sim.udpPort, broker: broker, caFile: broker.caFile)
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 124, "\(run.summary)")
        #expect(try run.json()["error"] as? String == "operationTimeout")
        #expect(try attempts(run).first?["outcome"] as? String == "no_answer")
        #expect(try attempts(run).first?["trigger_sent"] as? Bool == true)
    }

    @Test(
        "The ESP32 answers 1 the instant the trigger arrives: 20 openings in a row succeed",
        arguments: [false, true]
    )
    func subscribeBeforePublish(tls: Bool) throws {
        let broker = try MosquittoBroker(tls ? .tls : .plain)
        let sim = try Simulator(simMQTT(broker) + ["--hold-ms", "20"])
        let config = try mqttConfig(udpPort: sim.udpPort, broker: broker, caFile: broker.caFile)
        for index in 0..<20 {
            let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
            #expect(run.status == 0, "opening \(index): \(run.summary)")
        }
        #expect(try sim.activations().count == 20)
    }

    @Test("TLS with a CA made for the test, and a password from systemd credentials")
    func tlsAndPassword() throws {
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": "gate-pw-Tq9", "esp32": "esp32-pw-Zr4"]))
        let sim = try Simulator(
            simMQTT(broker, username: "esp32"),
            environment: ["ESP32_SIM_MQTT_PASSWORD": "esp32-pw-Zr4"]
        )
        let config = try mqttConfig(udpPort: sim.udpPort, broker: broker, username: "gate", caFile: broker.caFile)
        let environment = GateRunner.isolatedEnvironment([
            "CREDENTIALS_DIRECTORY": try credentialsDirectory(password: "gate-pw-Tq9")
        ])
        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: environment
        )
        #expect(run.status == 0, "\(run.summary)")
        #expect(!run.stdout.contains("gate-pw-Tq9") && !run.stderr.contains("gate-pw-Tq9"))
    }

    @Test("Wrong password: 69, the broker's words in the message")
    func wrongPassword() throws {
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": "right-pw", "esp32": "esp32-pw"]))
        let config = try mqttConfig(udpPort: nil, broker: broker, username: "gate", caFile: broker.caFile)
        let environment = GateRunner.isolatedEnvironment([
            "CREDENTIALS_DIRECTORY": try credentialsDirectory(password: "wrong-pw")
        ])
        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: environment
        )
        #expect(run.status == 69, "\(run.summary)")
        let reason = try attempts(run).first?["reason"] as? String ?? ""
        #expect(reason.lowercased().contains("not authori"), "\(reason)")
        #expect(!run.stdout.contains("wrong-pw") && !run.stderr.contains("wrong-pw"))
    }

    @Test("Wrong CA: 69, the certificate problem in the message")
    func wrongCA() throws {
        let broker = try MosquittoBroker(.tls)
        let otherCA = try MosquittoBroker.makeUnrelatedCA(in: broker.directory)
        let config = try mqttConfig(udpPort: nil, broker: broker, caFile: otherCA)
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let reason = try attempts(run).first?["reason"] as? String ?? ""
        #expect(reason.contains("certificate verify failed"), "\(reason)")
        #expect(
            reason.hasSuffix(
                "set ca_file in [mqtt] to the CA that signed the broker's certificate, and check that host matches its name"
            ),
            "the fix, last: \(reason)"
        )
        #expect(reason.contains("the CA in \(otherCA) (ca_file in [mqtt]) does not vouch for"), "\(reason)")
    }

    @Test("TLS to a plaintext broker: 69 well before the budget, saying so with the fix; OpenSSL's words at -v")
    func tlsToPlaintext() throws {
        let broker = try MosquittoBroker(.plain)
        let tlsBroker = try MosquittoBroker(.tls)
        let config = try TestConfig(
            "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\ntls = true\nca_file = \"\(tlsBroker.caFile!)\"\n"
        )
        let sentence =
            "the broker at 127.0.0.1:\(broker.port) does not speak TLS (set tls = false in [mqtt], or use its TLS port)"
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let attempt = try #require(try attempts(run).first)
        #expect(attempt["reason"] as? String == sentence, "\(attempt)")
        #expect((attempt["duration_ms"] as? Int ?? 9999) < 5000, "must not wait for the whole budget")

        let text = try GateRunner.run(["open", "--via", "mqtt", "--force", "--config", config.path])
        #expect(text.status == 69, "\(text.summary)")
        #expect(
            Self.withoutDuration(text.stderr) == """
                gate: the ESP32 could not be reached through the MQTT broker
                  mqtt (N ms): \(sentence)
                \(Self.nothingSent)

                """,
            "\(text.stderr)"
        )
        let verbose = try GateRunner.run(["open", "-v", "--via", "mqtt", "--force", "--config", config.path])
        #expect(verbose.stderr.contains("OpenSSL"), "the library's words are for -v: \(verbose.stderr)")
    }

    @Test("Plaintext to a TLS broker: 69 saying that the broker expects TLS, with the fix")
    func plaintextToTLS() throws {
        let broker = try MosquittoBroker(.tls)
        let config = try mqttConfig(udpPort: nil, broker: broker)
        let sentence =
            "the broker at 127.0.0.1:\(broker.port) expects TLS on this port (set tls = true in [mqtt], "
            + "or use its plain port)"
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let attempt = try #require(try attempts(run).first)
        #expect(attempt["reason"] as? String == sentence, "\(attempt)")

        let text = try GateRunner.run(["open", "--via", "mqtt", "--force", "--config", config.path])
        #expect(text.status == 69, "\(text.summary)")
        #expect(
            Self.withoutDuration(text.stderr) == """
                gate: the ESP32 could not be reached through the MQTT broker
                  mqtt (N ms): \(sentence)
                \(Self.nothingSent)

                """,
            "\(text.stderr)"
        )
    }

    /// The next step after a 69.
    static let nothingSent =
        "Nothing was sent that could move the gate: try again once the cause above is fixed; "
        + "`gate doctor` checks the whole set-up."

    /// `mqtt (12 ms)` as `mqtt (N ms)`: the text compared exactly, the time left out.
    static func withoutDuration(_ text: String) -> String {
        guard let open = text.range(of: "mqtt ("), let end = text[open.upperBound...].range(of: " ms)") else {
            return text
        }
        return text.replacingCharacters(in: open.upperBound..<end.lowerBound, with: "N")
    }

    @Test("A TLS broker that is down: 69 at once, connection refused (no spinning connect)")
    func tlsBrokerDown() throws {
        let broker = try MosquittoBroker(.tls)
        let config = try mqttConfig(udpPort: nil, broker: broker, caFile: broker.caFile)
        broker.stop()
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let attempt = try #require(try attempts(run).first)
        #expect((attempt["reason"] as? String)?.contains("Connection refused") == true, "\(attempt)")
        #expect((attempt["duration_ms"] as? Int ?? 9999) < 5000)
    }

    @Test("A broker that accepts TCP but never answers: the budget still ends the opening", arguments: [true, false])
    func silentBroker(tls: Bool) throws {
        let silent = try SilentTCPListener()
        let caFile = tls ? try MosquittoBroker.makeUnrelatedCA(in: URL(fileURLWithPath: NSTemporaryDirectory())) : nil
        var text = "[mqtt]\nhost = \"127.0.0.1\"\nport = \(silent.port)\ntimeout = 1.0\n"
        if let caFile { text += "tls = true\nca_file = \"\(caFile)\"\n" }
        let config = try TestConfig(text)
        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            timeout: .seconds(20)
        )
        #expect(run.status == 69, "\(run.summary)")
        let json = try run.json()
        #expect((json["duration_ms"] as? Int ?? 0) >= 1000)
    }

    @Test("Broker down: 69 at once, connection refused in the message")
    func brokerDown() throws {
        let broker = try MosquittoBroker(.plain)
        let config = try mqttConfig(udpPort: nil, broker: broker)
        broker.stop()
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let reason = try attempts(run).first?["reason"] as? String ?? ""
        #expect(reason.contains("Connection refused"), "\(reason)")
        #expect(reason.contains("127.0.0.1:\(broker.port)"))
    }

    @Test("A username without a password: --via mqtt is 78 with the how-to")
    func missingPasswordForced() throws {
        let broker = try MosquittoBroker(.password(users: ["gate": "pw"]))
        let config = try mqttConfig(udpPort: nil, broker: broker, username: "gate")
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(run.status == 78, "\(run.summary)")
        #expect((try run.json()["message"] as? String)?.contains("mqtt-password") == true)
    }

    @Test("A username without a password does not disturb an opening that UDP completes")
    func missingPasswordAuto() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(simMQTT(broker))
        let config = try mqttConfig(udpPort: sim.udpPort, broker: broker, username: "gate")
        let run = try GateRunner.run(["open", "--json", "--config", config.path])
        #expect(run.status == 0, "\(run.summary)")
        #expect(try run.json()["adapter"] as? String == "udp")
    }

    /// An opening refused by the lock or the cooldown must publish nothing.
    @Test("Refused by the lock or the cooldown, --via mqtt publishes no trigger", arguments: ["lock", "cooldown"])
    func refusedPublishesNothing(refusal: String) throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker)
        let sim = try Simulator(simMQTT(broker) + ["--hold-ms", refusal == "lock" ? "1500" : "50"])
        let config = try TestConfig(
            "[udp]\nhost = \"127.0.0.1\"\nport = \(sim.udpPort)\n[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n"
                + "[runtime]\ncooldown = \(refusal == "lock" ? 0 : 30)\n"
        )
        let environment = GateRunner.isolatedEnvironment()
        let first = try GateRunner.start(["open", "--via", "udp", "--config", config.path], environment: environment)
        if refusal == "lock" {
            let deadline = ContinuousClock.now + .seconds(10)
            while try sim.activations().isEmpty, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
        } else {
            #expect(try first.finish(timeout: .seconds(20)).status == 0)
        }

        let refused = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: environment
        )
        #expect(refused.status == 75, "\(refused.summary)")
        #expect(try refused.json()["error"] as? String == "operationInProgress")
        if refusal == "lock" {
            #expect(first.process.isRunning, "the refusal must come while the first opening holds the lock")
            #expect(try first.finish(timeout: .seconds(20)).status == 0)
        }
        // Give a stray publish time to reach the broker before concluding there was none.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(
            recorder.messages(topic: triggerTopic).isEmpty,
            "the broker saw a trigger: \(recorder.messages(topic: triggerTopic))"
        )
        #expect(try sim.activations().map(\.via) == ["udp"])
    }

    @Test(
        "The ESP32 answered over UDP: never a trigger on MQTT afterwards",
        arguments: [
            // The status topic, watched during the UDP attempt, shows the release the
            // datagrams lack: the cycle is confirmed (docs/CONTRACT.md#evidence-and-time).
            ("udp:no-release", 0),
            ("no-release", 124), ("udp:garbage", 76),
        ]
    )
    func neverTwiceAfterUDPAnswer(fault: String, status: Int) throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker)
        let sim = try Simulator(simMQTT(broker) + ["--fault", fault])
        let config = try mqttConfig(udpPort: sim.udpPort, broker: broker)
        let run = try GateRunner.run(["open", "--json", "--config", config.path])
        #expect(run.status == Int32(status), "\(run.summary)")
        // Give a stray publish time to reach the broker before concluding there was none.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(
            recorder.messages(topic: triggerTopic).isEmpty,
            "the broker saw a trigger: \(recorder.messages(topic: triggerTopic))"
        )
        #expect(try sim.activations().map(\.via) == ["udp"])
        // The deciding attempt is the last one listed: MQTT never ran.
        let tried = try attempts(run)
        #expect(tried.map { $0["adapter"] as? String } == ["udp"])
    }
}
