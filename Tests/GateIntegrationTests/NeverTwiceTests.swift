import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// "Never trigger twice" and the evidence behind it (docs/CONTRACT.md#evidence-and-time, the exit
/// code table): seven ways the relay could be triggered twice, a busy relay triggered, a
/// cooldown lost, or a script told "safe to retry" (69) after a trigger left the machine.
/// Black-box: the real `gate` and `esp32-sim`, a real mosquitto, loopback only.
///
/// The simulator's trigger log counts relay activations; `receivedTriggers()` counts every
/// trigger it received, including one ignored because the relay was still held: that is
/// the count that proves a second trigger was never sent.
@Suite("Never trigger twice: evidence, time, cooldown, the attempts list", .serialized)
struct NeverTwiceTests {
    // MARK: 1

    @Test("1. Slow name resolution eats the UDP budget: no UDP trigger after its deadline, one activation, via mqtt")
    func slowNameResolution() throws {
        let shim = try SlowResolverShim(host: "localhost", delayMs: 2050)
        let broker = try MosquittoBroker(.plain)
        // A short hold. A second trigger that lands inside a hold is ignored by the relay (no
        // second activation), which is why the triggers received are counted as well.
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--hold-ms", "50"])
        let config = try TestConfig(
            """
            [udp]
            host = "localhost"
            port = \(sim.udpPort)
            timeout = 2.0
            [mqtt]
            host = "127.0.0.1"
            port = \(broker.port)
            [runtime]
            cooldown = 0
            """
        )
        let environment = GateRunner.isolatedEnvironment(["LD_PRELOAD": shim.library])
        let run = try GateRunner.run(["open", "--json", "--config", config.path], environment: environment)

        #expect(
            shim.delayedLookups >= 1,
            "the shim never delayed a lookup of localhost: was it loaded?\n\(run.summary)"
        )
        let activations = try sim.activations()
        #expect(activations.count == 1, "\(activations)\n\(run.summary)")
        #expect(sim.receivedTriggers().count == 1, "\(sim.receivedTriggers())")
        #expect(run.status == 0, "\(run.summary)")
        let json = try run.json()
        #expect(json["adapter"] as? String == "mqtt", "\(run.stdout)")
        #expect(activations.map(\.via) == ["mqtt"])
        let attempts = try NeverTwice.attempts(run)
        let udp = attempts.first { $0["adapter"] as? String == "udp" }
        #expect(udp != nil, "no udp attempt listed: \(run.stdout)")
        #expect(NeverTwice.flag(udp?["trigger_sent"]) == false, "udp attempt: \(String(describing: udp))")
        #expect(NeverTwice.strings(attempts, "adapter").last == "mqtt", "\(run.stdout)")
        #expect(NeverTwice.strings(attempts, "outcome").last == "success", "\(run.stdout)")
        #expect(NeverTwice.triggerSent(attempts).last == true, "\(run.stdout)")
    }

    // MARK: 2

    @Test("2. The daemon keeps its own evidence: UDP silent but 1-then-0 on the status topic confirms; one activation")
    func daemonUsesStatusTopicEvidence() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--fault", "udp:silent"])
        let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
        let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
        try daemon.waitForReady()
        #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
        daemon.waitForSettling()

        let pressed = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: pressed, timeout: .seconds(20)), "\(daemon.log)")
        // A second trigger would come at the end of the 2 s UDP budget: past it by now, but
        // give a slow machine a moment to show one.
        Thread.sleep(forTimeInterval: 0.5)

        let activations = try sim.activations()
        #expect(activations.count == 1, "\(activations.map(\.via))\n\(daemon.log)")
        #expect(sim.receivedTriggers().count == 1, "\(sim.receivedTriggers())")
        let history = try daemon.history()
        #expect(history.map { $0["source"] as? String } == ["button"], "\(history)")
        #expect(
            history.filter { $0["source"] as? String == "button" }.map { $0["outcome"] as? String } == ["success"],
            "\(history)\n\(daemon.log)"
        )
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    // MARK: 3

    @Test("3. A 1 that arrived before the deadline counts although gate read it late (SIGSTOP): no MQTT fallback, 124")
    func replyArrivedInTime() throws {
        let fake = try FakeESP32()
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker))
        let config = try TestConfig(
            """
            [udp]
            host = "127.0.0.1"
            port = \(fake.port)
            timeout = 2.0
            [mqtt]
            host = "127.0.0.1"
            port = \(broker.port)
            [runtime]
            cooldown = 0
            """
        )
        let gate = try GateRunner.start(["open", "--json", "--config", config.path])
        var stopped = false
        defer { if stopped { kill(gate.pid, SIGCONT) } }

        let trigger = try #require(try fake.receive(within: .seconds(10)), "gate sent no UDP trigger")
        let t0 = ContinuousClock.now
        #expect(trigger.bytes == [0x01])
        NeverTwice.sleep(until: t0 + .milliseconds(1800))
        kill(gate.pid, SIGSTOP)
        stopped = true
        let stoppedAt = ContinuousClock.now - t0
        NeverTwice.sleep(until: t0 + .milliseconds(1900))
        try fake.reply([0x01], toPort: trigger.fromPort)
        let activatedAt = ContinuousClock.now - t0
        NeverTwice.sleep(until: t0 + .milliseconds(2200))
        kill(gate.pid, SIGCONT)
        stopped = false
        let continuedAt = ContinuousClock.now - t0
        NeverTwice.sleep(until: t0 + .milliseconds(2300))
        try fake.reply([0x00], toPort: trigger.fromPort)
        let releasedAt = ContinuousClock.now - t0
        let timeline =
            "after the trigger arrived: SIGSTOP at \(NeverTwice.seconds(stoppedAt)), 0x01 at \(NeverTwice.seconds(activatedAt)), "
            + "SIGCONT at \(NeverTwice.seconds(continuedAt)), 0x00 at \(NeverTwice.seconds(releasedAt))"

        let run = try gate.finish(timeout: .seconds(20))
        // Whatever an MQTT attempt would have published has reached the simulator by now.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(try sim.activations().isEmpty, "MQTT triggered the relay a second time (\(timeline))\n\(run.summary)")
        #expect(sim.receivedTriggers().isEmpty, "\(sim.receivedTriggers())")
        #expect(run.status == 124, "\(timeline)\n\(run.summary)")
        let json = try run.json()
        #expect(json["outcome"] as? String == "timeout", "\(run.stdout)")
        #expect(json["error"] as? String == "operationTimeout", "\(run.stdout)")
        let attempts = try NeverTwice.attempts(run)
        #expect(NeverTwice.strings(attempts, "adapter") == ["udp"], "nothing after the deciding attempt: \(run.stdout)")
        #expect(attempts.first?["outcome"] as? String == "timeout", "1 without 0 within the budget: \(run.stdout)")
        #expect(NeverTwice.flag(attempts.first?["trigger_sent"]) == true, "\(run.stdout)")
    }

    // MARK: 4

    @Test(
        "4. Killing an opener mid-cycle keeps the cooldown: a second opening 1.2 s after the trigger is refused (75)",
        arguments: [SIGKILL, SIGTERM]
    )
    func killedOpenerKeepsCooldown(signal: Int32) throws {
        let sim = try Simulator(["--hold-ms", "1500"])
        let config = try TestConfig(
            """
            [udp]
            host = "127.0.0.1"
            port = \(sim.udpPort)
            [runtime]
            cooldown = 2
            """
        )
        let environment = GateRunner.isolatedEnvironment()
        let first = try GateRunner.start(["open", "--config", config.path], environment: environment)
        let seen = try waitUntil(.seconds(10)) { try !sim.activations().isEmpty }
        first.send(signal)
        try #require(seen, "the first opening never activated the relay")
        let activation = try #require(try sim.activations().first)
        let triggeredAt = try #require(NeverTwice.date(activation.at), "unreadable time \(activation.at)")

        // 1.2 s after the trigger (by the simulator's clock, which is this machine's).
        let wait = triggeredAt.addingTimeInterval(1.2).timeIntervalSinceNow
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        let secondStart = Date().timeIntervalSince(triggeredAt)
        let second = try GateRunner.run(["open", "--json", "--config", config.path], environment: environment)
        let ended = try first.finish(timeout: .seconds(20))
        if signal == SIGKILL {
            #expect(
                first.endedBySignal && ended.status == SIGKILL,
                "the first opener was not killed mid-cycle: \(ended.summary)"
            )
        }

        #expect(
            second.status == 75,
            "second opening started \(String(format: "%.2f", secondStart)) s after the trigger\n\(second.summary)"
        )
        #expect(try second.json()["error"] as? String == "operationInProgress", "\(second.stdout)")
        let activations = try sim.activations()
        #expect(activations.count == 1, "\(activations)")
        #expect(
            sim.receivedTriggers().count == 1,
            "a second trigger was sent: \(sim.receivedTriggers())\nfirst opener: \(ended.summary)"
        )
    }

    // MARK: 5

    @Test("5a. --via mqtt, the trigger published and no answer: 124 operationTimeout, no_answer, trigger_sent")
    func silenceAfterPublishedTrigger() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--fault", "mqtt:silent"])
        let config = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n[runtime]\ncooldown = 0\n")
        let run = try GateRunner.run(["open", "--via", "mqtt", "--json", "--config", config.path])
        #expect(try sim.activations().map(\.via) == ["mqtt"], "the trigger reached the relay")
        #expect(run.status == 124, "\(run.summary)")
        let json = try run.json()
        #expect(json["outcome"] as? String == "timeout", "\(run.stdout)")
        #expect(json["error"] as? String == "operationTimeout", "\(run.stdout)")
        let attempts = try NeverTwice.attempts(run)
        #expect(attempts.first?["adapter"] as? String == "mqtt", "\(run.stdout)")
        #expect(attempts.first?["outcome"] as? String == "no_answer", "\(run.stdout)")
        #expect(NeverTwice.flag(attempts.first?["trigger_sent"]) == true, "\(run.stdout)")
    }

    @Test("5b. auto, UDP and MQTT both sent and both silent: 124, both attempts trigger_sent")
    func silenceOnBothAdapters() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--fault", "silent"])
        let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
        let run = try GateRunner.run(["open", "--json", "--config", config.path])
        #expect(run.status == 124, "\(run.summary)")
        let json = try run.json()
        #expect(json["outcome"] as? String == "timeout", "\(run.stdout)")
        #expect(json["error"] as? String == "operationTimeout", "\(run.stdout)")
        let attempts = try NeverTwice.attempts(run)
        #expect(NeverTwice.strings(attempts, "adapter") == ["udp", "mqtt"], "\(run.stdout)")
        #expect(NeverTwice.strings(attempts, "outcome") == ["no_answer", "no_answer"], "\(run.stdout)")
        #expect(NeverTwice.triggerSent(attempts) == [true, true], "\(run.stdout)")
    }

    // MARK: 6

    @Test(
        "6. A relay known to be active (another client's cycle) is not triggered: the press is refused, 'the relay is active'"
    )
    func busyRelayNotTriggered() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--hold-ms", "3000"])
        let config = try TestConfig(daemonConfigText(udpPort: nil, mqttPort: broker.port, cooldown: 0))
        let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
        try daemon.waitForReady()
        #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
        daemon.waitForSettling()

        // Another client (the phone app) triggers the relay through the broker.
        try broker.publish(topic: NeverTwice.triggerTopic, payload: String(Int(Date().timeIntervalSince1970)), qos: 0)
        try #require(
            try waitUntil(.seconds(5)) { try !sim.activations().isEmpty },
            "the foreign trigger did not reach the relay"
        )
        // The daemon has seen the 1 once the status file says so; at most ~1.5 s more otherwise.
        let shown = waitUntil(.milliseconds(1500)) {
            let status = daemon.status()
            return status?["source"] as? String == "elsewhere"
                && status?["state"] as? String == "waiting_for_relay_close"
        }
        try daemon.press()

        let refused = daemon.waitForLog("relay is active", timeout: .seconds(5))
        let buttonLines = daemon.logLines(containing: "button")
        #expect(
            refused,
            "the press was not refused because the relay is active (status showed elsewhere: \(shown)); button lines: \(buttonLines)"
        )
        let lines = daemon.logLines(containing: "relay is active")
        #expect(lines.contains { $0.contains("button") }, "the refusal must be the button's: \(lines)")

        // The foreign cycle ends (3 s hold); then nothing more may have reached the relay.
        #expect(waitUntil(.seconds(10)) { sim.stderrText.contains("released #1") }, "\(sim.stderrText)")
        Thread.sleep(forTimeInterval: 0.3)
        let activations = try sim.activations()
        #expect(activations.count == 1, "\(activations)\n\(daemon.log)")
        #expect(sim.receivedTriggers().count == 1, "\(sim.receivedTriggers())")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    // MARK: 7

    @Test("7. --json after a success lists nothing after the successful adapter (skipped ones before it stay)")
    func attemptsStopAtSuccess() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker))

        // [udp] only: just the UDP success, no "mqtt skipped" after it.
        let udpOnly = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
        let udpRun = try GateRunner.run(["open", "--json", "--config", udpOnly.path])
        #expect(udpRun.status == 0, "\(udpRun.summary)")
        let udpAttempts = try NeverTwice.attempts(udpRun)
        #expect(NeverTwice.strings(udpAttempts, "adapter") == ["udp"], "\(udpRun.stdout)")
        #expect(NeverTwice.strings(udpAttempts, "outcome") == ["success"], "\(udpRun.stdout)")
        #expect(NeverTwice.triggerSent(udpAttempts) == [true], "\(udpRun.stdout)")

        // [mqtt] only, auto: UDP skipped before the MQTT success, listed with its reason.
        let mqttOnly = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker.port)\n[runtime]\ncooldown = 0\n")
        let mqttRun = try GateRunner.run(["open", "--via", "auto", "--json", "--config", mqttOnly.path])
        #expect(mqttRun.status == 0, "\(mqttRun.summary)")
        let mqttAttempts = try NeverTwice.attempts(mqttRun)
        #expect(NeverTwice.strings(mqttAttempts, "adapter") == ["udp", "mqtt"], "\(mqttRun.stdout)")
        #expect(NeverTwice.strings(mqttAttempts, "outcome") == ["skipped", "success"], "\(mqttRun.stdout)")
        #expect((mqttAttempts.first?["reason"] as? String)?.contains("not configured") == true, "\(mqttRun.stdout)")
        #expect(NeverTwice.triggerSent(mqttAttempts) == [false, true], "\(mqttRun.stdout)")

        #expect(try sim.activations().map(\.via) == ["udp", "mqtt"])
    }
}
