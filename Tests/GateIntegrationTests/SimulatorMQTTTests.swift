import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The simulator's MQTT side against docs/CONTRACT.md#protocol and #the-relay-simulator, with a real mosquitto
/// broker and real mosquitto_pub/mosquitto_sub. Timing checks are lower bounds only.
@Suite(.serialized)
struct SimulatorMQTTTests {
    static let trigger = "iot/house/gate/esp32/trigger"
    static let status = "iot/house/gate/esp32/status"

    private func options(_ broker: MosquittoBroker, hold: Int = 400) -> [String] {
        var options = ["--hold-ms", String(hold), "--mqtt-host", broker.host, "--mqtt-port", String(broker.port)]
        if let caFile = broker.caFile { options += ["--mqtt-tls-ca", caFile] }
        if let user = broker.defaultCredentials { options += ["--mqtt-username", user.username] }
        return options
    }

    private func password(_ broker: MosquittoBroker) -> [String: String] {
        broker.defaultCredentials.map { ["ESP32_SIM_MQTT_PASSWORD": $0.password] } ?? [:]
    }

    /// How much earlier than the hold a `0` may appear to a subscriber, in seconds:
    /// broker and subscriber delivery jitter on the preceding `1` (seen: 2.4 ms).
    static let transportAllowance = 0.05

    private func publishTrigger(_ broker: MosquittoBroker, retained: Bool = false) throws -> String {
        let now = String(Int(Date().timeIntervalSince1970))
        try broker.publish(topic: Self.trigger, payload: now, retained: retained)
        return now
    }

    @Test func mqttTriggerPublishesOneThenZeroAfterTheHold() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 400))
        #expect(sim.stdoutBeforeReady == "ready\n")
        #expect(sim.mqttClientID?.wholeMatch(of: /esp32-sim-[0-9a-f]{8}/) != nil, "\(sim.mqttClientID ?? "none")")

        let payload = try publishTrigger(broker)
        let seen = watcher.wait(count: 2, within: .seconds(5))
        try #require(seen.map(\.payload) == ["1", "0"], "stderr:\n\(sim.stderrText)")
        // Seen by a subscriber behind the broker: the `1` can be delivered a little late,
        // which shrinks the gap. The allowance still catches a release before the hold.
        #expect(seen[1].arrival - seen[0].arrival >= 0.4 - Self.transportAllowance)
        #expect(seen.allSatisfy { !$0.retained })
        #expect(watcher.wait(count: 3, within: .milliseconds(500)).count == 2, "nothing after the release")
        let activations = try sim.activations()
        #expect(activations.map(\.via) == ["mqtt"])
        #expect(activations.first?.payload == payload && activations.first?.from == nil)
        #expect(try sim.triggerLogLines().first?.hasPrefix(#"{"via":"mqtt","at":""#) == true)
        // Not retained: a subscriber arriving now gets no status at all.
        let late = try MQTTRecorder(broker, topic: Self.status)
        #expect(late.waitForMessages(topic: Self.status, within: .milliseconds(500)).isEmpty)
        #expect(try sim.stop() == .exited(0))
    }

    @Test func retainedTriggerIsStaleAndIgnored() throws {
        let broker = try MosquittoBroker(.plain)
        _ = try publishTrigger(broker, retained: true)
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 100))
        #expect(watcher.wait(count: 1, within: .seconds(1)).isEmpty)
        #expect(try sim.activations().isEmpty)
        #expect(sim.stderrText.contains("ignored retained trigger"))
        // A live trigger still works.
        _ = try publishTrigger(broker)
        #expect(watcher.wait(count: 2, within: .seconds(5)).map(\.payload) == ["1", "0"])
    }

    @Test func udpTriggerIsAlsoPublishedOnMQTT() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 300))
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(try probe.receive(count: 2, within: .seconds(5)).map(\.bytes) == [[0x01], [0x00]])
        let seen = watcher.wait(count: 2, within: .seconds(5))
        try #require(seen.map(\.payload) == ["1", "0"])
        #expect(seen[1].arrival - seen[0].arrival >= 0.3 - Self.transportAllowance)
        #expect(try sim.activations().map(\.via) == ["udp"])
    }

    @Test func triggerWhileHeldIsIgnoredAcrossTransports() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 1500))
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        try #require(try probe.receive(count: 1, within: .seconds(5)).map(\.bytes) == [[0x01]])
        _ = try publishTrigger(broker)  // the relay is held
        #expect(try probe.receive(count: 1, within: .seconds(5)).map(\.bytes) == [[0x00]])
        #expect(watcher.wait(count: 3, within: .milliseconds(500)).map(\.payload) == ["1", "0"])
        #expect(try sim.activations().map(\.via) == ["udp"])
        #expect(sim.stderrText.contains("ignored: relay held (trigger via mqtt)"))
    }

    @Test func mqttGarbagePublishesXAndLeavesUDPHealthy() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 200) + ["--fault", "mqtt:garbage"])
        _ = try publishTrigger(broker)
        #expect(watcher.wait(count: 2, within: .milliseconds(1200)).map(\.payload) == ["x"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(try probe.receive(count: 2, within: .seconds(5)).map(\.bytes) == [[0x01], [0x00]])
        #expect(watcher.wait(count: 2, within: .seconds(2)).map(\.payload) == ["x", "x"])
        #expect(try sim.activations().map(\.via) == ["mqtt", "udp"])
    }

    @Test func udpSilentLeavesMQTTHealthy() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 200) + ["--fault", "udp:silent"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(watcher.wait(count: 2, within: .seconds(5)).map(\.payload) == ["1", "0"])
        #expect(try probe.receiveAll(within: .milliseconds(300)).isEmpty)
        _ = try publishTrigger(broker)
        #expect(watcher.wait(count: 4, within: .seconds(5)).map(\.payload) == ["1", "0", "1", "0"])
        #expect(try sim.activations().map(\.via) == ["udp", "mqtt"])
    }

    @Test func slowReleaseHoldsLongOnlyForItsTransport() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 100) + ["--fault", "mqtt:slow-release"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(try probe.receive(count: 2, within: .seconds(2)).map(\.bytes) == [[0x01], [0x00]])
        let udpCycle = watcher.wait(count: 2, within: .seconds(5))
        try #require(udpCycle.map(\.payload) == ["1", "0"])
        _ = try publishTrigger(broker)
        let seen = watcher.wait(count: 4, within: .seconds(8))
        try #require(seen.map(\.payload) == ["1", "0", "1", "0"])
        #expect(seen[3].arrival - seen[2].arrival >= 3.0 - Self.transportAllowance)
    }

    @Test func udpOffListensNowhereButMQTTWorks() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let port = try freeUDPPort()
        let sim = try Simulator(options(broker, hold: 100) + ["--fault", "udp-off"], udp: "127.0.0.1:\(port)")
        #expect(!sim.listensOnUDP && sim.udpPort == 0)
        #expect(!sim.stderrText.contains("listening on udp"))
        #expect(try udpPortRefuses(port), "ICMP port unreachable expected on \(port)")
        _ = try publishTrigger(broker)
        #expect(watcher.wait(count: 2, within: .seconds(5)).map(\.payload) == ["1", "0"])
        #expect(try sim.stop() == .exited(0))
    }

    @Test func mqttOffMakesNoConnection() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(options(broker, hold: 100) + ["--fault", "mqtt-off"])
        #expect(sim.mqttClientID == nil)
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(try probe.receive(count: 2, within: .seconds(5)).map(\.bytes) == [[0x01], [0x00]])
        #expect(!broker.logText.contains("esp32-sim-"), "no client of the simulator reached the broker")
    }

    @Test func tlsAndPasswordFromTheEnvironment() throws {
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["esp32": "pa ss:wörd"]))
        let watcher = try StatusWatcher(broker)
        let sim = try Simulator(options(broker, hold: 200), environment: password(broker))
        #expect(!sim.arguments.contains { $0.contains("wörd") })
        _ = try publishTrigger(broker)
        #expect(watcher.wait(count: 2, within: .seconds(5)).map(\.payload) == ["1", "0"], "\(sim.stderrText)")
        #expect(try sim.stop() == .exited(0))
    }

    @Test(arguments: [["ESP32_SIM_MQTT_PASSWORD": "wrong"], [:]])
    func wrongPasswordExitsOneNotAuthorised(environment: [String: String]) throws {
        let broker = try MosquittoBroker(.password(users: ["esp32": "right"]))
        let result = try Simulator.run(["--udp", "127.0.0.1:0"] + options(broker), environment: environment)
        #expect(result.termination == .exited(1))
        #expect(result.stderr.contains("not authorised"), "\(result.stderr)")
        #expect(result.stderr.contains("127.0.0.1:\(broker.port)"))
        #expect(result.stdout.isEmpty)
    }

    @Test func untrustedCertificateExitsOneWithTheTLSError() throws {
        let broker = try MosquittoBroker(.tls)
        let otherCA = try MosquittoBroker.makeUnrelatedCA(in: broker.directory.appendingPathComponent("other"))
        let arguments = [
            "--udp", "127.0.0.1:0", "--mqtt-host", broker.host, "--mqtt-port", String(broker.port), "--mqtt-tls-ca",
            otherCA,
        ]
        let result = try Simulator.run(arguments)
        #expect(result.termination == .exited(1))
        #expect(result.stderr.contains("certificate verify failed"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func noCONNACKWithinTenSecondsExitsOne() throws {
        let silent = try SilentTCPListener()  // accepts in the kernel, never answers
        let result = try Simulator.run(
            ["--udp", "127.0.0.1:0", "--mqtt-host", "127.0.0.1", "--mqtt-port", String(silent.port)],
            timeout: .seconds(20)
        )
        #expect(result.termination == .exited(1))
        #expect(
            result.stderr.contains("127.0.0.1:\(silent.port)") && result.stderr.contains("within 10 s"),
            "\(result.stderr)"
        )
    }

    @Test func signalWhileConnectingExitsZero() throws {
        let silent = try SilentTCPListener()
        let process = Process()
        process.executableURL = try Simulator.binary()
        process.arguments = ["--udp", "127.0.0.1:0", "--mqtt-host", "127.0.0.1", "--mqtt-port", String(silent.port)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        Thread.sleep(forTimeInterval: 1)
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }

    @Test func sigtermExitsZeroWhileHeldAndWithTheBrokerGone() throws {
        let broker = try MosquittoBroker(.plain)
        let watcher = try StatusWatcher(broker)
        let held = try Simulator(options(broker, hold: 5000))
        _ = try publishTrigger(broker)
        try #require(watcher.wait(count: 1, within: .seconds(5)).map(\.payload) == ["1"])
        #expect(try held.stop() == .exited(0))
        #expect(held.stderrText.contains("stopping"))

        let orphan = try Simulator(options(broker))
        broker.kill()
        #expect(waitFor(within: .seconds(10)) { orphan.stderrText.contains("lost the connection") })
        #expect(try orphan.stop(timeout: .seconds(5)) == .exited(0))
    }

    @Test func reconnectsAndResubscribesAfterABrokerRestart() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(options(broker, hold: 100))
        try broker.restart()
        try #require(
            waitFor(within: .seconds(15)) { sim.stderrText.contains("subscribed to \(Self.trigger) again") },
            "\(sim.stderrText)"
        )
        let watcher = try StatusWatcher(broker)
        _ = try publishTrigger(broker)
        #expect(watcher.wait(count: 2, within: .seconds(5)).map(\.payload) == ["1", "0"])
        #expect(try sim.activations().map(\.via) == ["mqtt"])
    }
}

// MARK: - Helpers

/// mosquitto_sub on the status topic, recording when each message arrived (`%U`: the time
/// mosquitto_sub received it), for "at least the hold between `1` and `0`".
private final class StatusWatcher {
    struct Message {
        let payload: String
        let retained: Bool
        /// Seconds since the Unix epoch.
        let arrival: Double
    }

    private let directory: URL
    private let output: URL
    private let child: MosquittoBroker.Child

    /// Returns once subscribed: a marker published to the broker came back.
    init(_ broker: MosquittoBroker, topic: String = SimulatorMQTTTests.status) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("status-watcher-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        output = directory.appendingPathComponent("stdout")
        let marker = "\(MQTTRecorder.markerPrefix)watcher/\(UUID().uuidString)"
        child = try MosquittoBroker.Child(
            MosquittoBroker.mosquittoSub,
            broker.clientArguments(credentials: .brokerDefault, trust: .brokerCA)
                + ["-t", topic, "-t", marker, "-F", "%U %r %t %p"],
            stdout: output,
            stderr: directory.appendingPathComponent("stderr"),
            watchdog: true
        )
        let seen = waitFor(within: .seconds(10)) {
            _ = try? broker.runPublish(topic: marker, payload: "ready", qos: 0)
            return waitFor(within: .milliseconds(250)) { self.lines().contains { $0.contains(marker) } }
        }
        guard seen else { throw MosquittoBroker.Failure("mosquitto_sub did not subscribe within 10 s") }
    }

    deinit {
        child.terminate(grace: .seconds(1))
        try? FileManager.default.removeItem(at: directory)
    }

    /// Waits until `count` status messages arrived or `timeout` passed; returns those seen.
    func wait(count: Int, within timeout: Duration) -> [Message] {
        _ = waitFor(within: timeout) { self.messages().count >= count }
        return messages()
    }

    private func messages() -> [Message] {
        lines().compactMap { line in
            // "1795300000.123456789 0 topic payload"; the status topic has no spaces.
            let fields = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count == 4, !fields[2].hasPrefix(MQTTRecorder.markerPrefix), let arrival = Double(fields[0])
            else { return nil }
            return Message(payload: String(fields[3]), retained: fields[1] == "1", arrival: arrival)
        }
    }

    private func lines() -> [Substring] {
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").dropLast(text.hasSuffix("\n") ? 0 : 1)
    }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
private func waitFor(within timeout: Duration, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
}
