import GateCore
import GateSystem
import GateTestSupport
import Synchronization
import Testing

/// The real adapters in process, against real sockets on loopback: a fake ESP32 for UDP,
/// a real mosquitto for MQTT. The opening's clock is moved by hand, so "the deadline
/// passed" is something the test decides, not something it waits for.
@Suite("Adapters on loopback, in process")
struct AdapterLoopbackTests {
    private static let triggerTopic = MQTTConfig.defaultTriggerTopic
    private static let statusTopic = MQTTConfig.defaultStatusTopic

    @Test(
        "UDP: datagrams that arrived while the adapter was not reading are drained before 'no answer': evidence, no fallback"
    )
    func udpDrainsBeforeNoAnswer() async throws {
        let esp = try FakeESP32()
        let marker = try LoopbackSocket(.udp)
        let clock = ManualOpeningClock()
        let deadline = clock.now() + .seconds(2)
        let problem = Mutex<String?>(nil)
        // The adapter's thread stops right after its send, as a starved or stopped process
        // would: meanwhile the ESP32 answers a whole cycle and the budget ends. When the
        // thread goes on, the answer is already queued and the deadline past.
        let logs = LogCapture { entry in
            guard entry.message == "trigger sent", entry.metadata["adapter"] == "udp" else { return }
            do {
                guard let trigger = try esp.receive(within: .seconds(10)) else {
                    problem.withLock { $0 = "the fake ESP32 got no trigger" }
                    return
                }
                try esp.reply([0x01], toPort: trigger.fromPort)
                try esp.reply([0x00], toPort: trigger.fromPort)
                // Loopback passes one socket's datagrams on in order: once the marker sent
                // after them is in, the two answers are queued at the adapter's socket.
                try esp.socket.send([0xee], toPort: marker.port)
                if try marker.receive(waiting: .seconds(10)) == nil {
                    problem.withLock { $0 = "the marker datagram never arrived" }
                }
            } catch {
                problem.withLock { $0 = "fake ESP32: \(error)" }
            }
            clock.advance(to: deadline + .milliseconds(1))
        }
        let bench = try PipelineBench(logs: logs, clock: clock)
        let udp = UDPAdapter(
            host: "127.0.0.1",
            port: Int(esp.port),
            onLinkOnly: true,
            interfaces: { .success([]) },
            logger: logs.logger()
        )
        let mqtt = ScriptedAdapter(
            .mqtt,
            script: [.send, .report(.relay(.activated)), .report(.relay(.released)), .finish]
        )

        let result = await bench.open(
            bench.pipeline([udp, mqtt]),
            config: PipelineBench.config(udpPort: Int(esp.port))
        )

        #expect(problem.withLock { $0 } == nil, "\(problem.withLock { $0 } ?? "")")
        #expect(
            mqtt.attempts.isEmpty,
            "MQTT was tried although the ESP32 had answered: \(result.summaries)\n\(logs.text)"
        )
        #expect(result.error == .operationTimeout, "\(result.message)")
        #expect(
            result.summaries == [AttemptSummary(.udp, .timeout, sent: true, .activatedAtDeadline(budget: .seconds(2)))]
        )
        let read = logs.entries(message: "datagram received").compactMap { $0.metadata["bytes"] }
        #expect(read == ["0x01", "0x00"], "\(logs.text)")
        #expect(try esp.receive(within: .milliseconds(200)) == nil, "a second trigger reached the ESP32")
    }

    @Test(
        "MQTT through a link of the attempt's own on a real broker: SUBACK before the publish, a retained 1 ignored, a trigger met with silence is no_answer with trigger_sent"
    )
    func mqttOwnLinkExchange() async throws {
        let broker = try MosquittoBroker()
        // Another client's cycle, long over: stale by definition, delivered with the SUBACK.
        try broker.publish(topic: Self.statusTopic, payload: "1", retained: true)
        // Every chunk, both ways, 300 ms late: a client that published before its SUBACK
        // came would publish while the broker has not even seen its SUBSCRIBE.
        let proxy = try ChaosSlowProxy(to: broker.port, delay: .milliseconds(300))
        defer { proxy.stop() }
        let recorder = try MQTTRecorder(broker, topic: Self.triggerTopic)
        let clock = ManualOpeningClock()
        let budget = Duration.seconds(5)
        let deadline = clock.now() + budget
        let clientID = Mutex<String?>(nil)
        let subackBeforePublish = Mutex<Bool?>(nil)
        let logs = LogCapture { entry in
            if entry.message == "MQTT link connecting", let id = entry.metadata["client_id"] {
                clientID.withLock { $0 = id }
            }
            if entry.message == "trigger published through the MQTT link" {
                let id = clientID.withLock { $0 } ?? "?"
                subackBeforePublish.withLock { $0 = broker.logText.contains("Sending SUBACK to \(id)") }
            }
        }
        let bench = try PipelineBench(logs: logs, clock: clock)
        let config = GateConfig(
            mqtt: MQTTConfig(host: "127.0.0.1", port: Int(proxy.port), timeout: 5),
            runtime: RuntimeConfig()
        )
        let link = try MQTTLink(
            config: try #require(config.mqtt),
            credentials: CredentialLookup(sources: []),
            logger: logs.logger(),
            onUnclaimed: { _, _ in }
        )
        let mqtt = LinkAdapter(link: link, failFast: true, ownsLink: true)

        let opening = Task {
            await bench.open(
                bench.pipeline([mqtt]),
                config: config,
                request: OpeningRequest(source: "test", selection: .mqtt)
            )
        }
        // Nobody answers the trigger; once it is at the broker, the budget ends.
        #expect(
            await eventually { !recorder.messages(topic: Self.triggerTopic).isEmpty },
            "no trigger reached the broker\n\(logs.text)\n\(broker.logText)"
        )
        clock.advance(to: deadline + .milliseconds(1))
        let result = await opening.value

        #expect(result.error == .operationTimeout, "\(result.message)\n\(logs.text)")
        #expect(result.exitCode == 124)
        #expect(
            result.summaries == [AttemptSummary(.mqtt, .noAnswer, sent: true, .noAnswer(budget: budget))],
            "\(logs.text)"
        )
        let id = try #require(clientID.withLock { $0 }, "the link never said its client id\n\(logs.text)")
        #expect(
            subackBeforePublish.withLock { $0 } == true,
            "the trigger was published before the broker sent its SUBACK\n\(broker.logText)"
        )
        // The retained 1 did reach this client, and was not taken for relay activity.
        #expect(
            broker.logText.contains("Sending PUBLISH to \(id) (d0, q0, r1, m0, '\(Self.statusTopic)'"),
            "\(broker.logText)"
        )
        #expect(logs.entries(message: "retained status ignored").count == 1, "\(logs.text)")
        let triggers = recorder.messages(topic: Self.triggerTopic)
        #expect(triggers.count == 1 && triggers.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }, "\(triggers)")
    }
}
