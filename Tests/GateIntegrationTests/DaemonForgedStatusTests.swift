import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let statusTopic = "iot/house/gate/esp32/status"

/// A `1` on the status topic that no relay answers with its `0`: what any client allowed
/// to publish there can send (issue 18 item 4).
private func forgeActivation(_ broker: MosquittoBroker) throws {
    try broker.publish(topic: statusTopic, payload: "1", qos: 1)
}

extension DaemonTests {
    @Suite("Forged status messages (issue 18 item 4)")
    struct ForgedStatus {
        @Test("One forged 1 keeps openers out for a short bound, not the whole MQTT budget")
        func forgedOneLocksOutBriefly() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            // A long MQTT budget makes the difference plain: the lock must not last it.
            let config = try TestConfig(
                daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port) + "timeout = 20\n"
            )
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")

            let forgedAt = ContinuousClock.now
            try forgeActivation(broker)
            #expect(daemon.waitForLog("relay activated by someone else"), "\(daemon.log)")
            // Openings are refused while the hold lasts (1.5 s) and the cooldown after the
            // unanswered 1 (2 s by default); well before the 20 s budget one goes through.
            var last: GateRun?
            while ContinuousClock.now - forgedAt < .seconds(12) {
                let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
                last = run
                if run.status == 0 { break }
                #expect(run.status == 75, "\(run.summary)")
                Thread.sleep(forTimeInterval: 0.25)
            }
            let waited = ContinuousClock.now - forgedAt
            #expect(
                last?.status == 0,
                "still refused \(waited) after a forged 1: \(last?.summary ?? "")\n\(daemon.log)"
            )
            #expect(waited < .seconds(12))
            #expect(try sim.activations().count == 1)
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "A button press after a forged 1 is refused as 'relay active' for the short bound only (MQTTLink.relayActive)"
        )
        func pressAfterForgedOne() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            // No cooldown, and a 20 s budget: only the busy-relay rule could refuse the press.
            let config = try TestConfig(
                daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port)
                    + "timeout = 20\n[runtime]\ncooldown = 0\n"
            )
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
            daemon.waitForSettling()

            try forgeActivation(broker)
            #expect(
                daemon.waitForLog(
                    "relay activated elsewhere but its release was never reported",
                    timeout: .seconds(30)
                ),
                "\(daemon.log)"
            )
            Thread.sleep(forTimeInterval: 1)
            let pressed = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: pressed), "\(daemon.log)")
            #expect(daemon.logLines(containing: "relay is active").isEmpty, "\(daemon.log)")
            #expect(try sim.activations().count == 1, "\(daemon.log)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("Repeated forged 1s make one history line, and a real cycle after them is still recorded")
        func repeatedForgeriesRecordedOnce() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            // A short budget: each forged 1 below ends before the next arrives, whatever bound applies.
            // ([mqtt] is the last table of daemonConfigText: `timeout` lands in it.)
            let config = try TestConfig(
                daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port) + "timeout = 1\n[runtime]\ncooldown = 0\n"
            )
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")

            for round in 1...4 {
                try forgeActivation(broker)
                #expect(
                    daemon.waitForLog(
                        "relay activated elsewhere but its release was never reported",
                        count: round,
                        timeout: .seconds(20)
                    ),
                    "\(daemon.log)"
                )
                // Past RelayObserver.echoBound after the previous end, so that no `1` is taken for an echo.
                Thread.sleep(forTimeInterval: 1.2)
            }
            let forged = try daemon.history().filter { $0["source"] as? String == "elsewhere" }
            #expect(
                forged.count == 1,
                "one line for the forged 1s within minutes, not one each: \(forged)\n\(daemon.log)"
            )
            #expect(forged.first?["outcome"] as? String == "timeout")

            // A real cycle by another client (the phone app) is recorded as before.
            try broker.publish(
                topic: "iot/house/gate/esp32/trigger",
                payload: String(Int(Date().timeIntervalSince1970)),
                qos: 0
            )
            #expect(daemon.waitForLog("relay cycle confirmed, caused elsewhere"), "\(daemon.log)")
            let history = try daemon.history().filter { $0["source"] as? String == "elsewhere" }
            #expect(history.map { $0["outcome"] as? String } == ["timeout", "success"], "\(history)")
            #expect(try sim.activations().count == 1)
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }
    }
}

extension DaemonTests {
    /// Echoes matched by count (docs/CONTRACT.md#gate-daemon, issue 28 item 12): before, a `1`
    /// within 1 s of a local opening's end was taken for its echo, so another client's cycle
    /// then got no history line and no cooldown.
    @Suite("Echoes are matched by count")
    struct EchoCount {
        @Test("Another client's cycle 0.3 s after a local opening is recorded as elsewhere and starts the cooldown")
        func cycleRightAfterALocalOpeningIsElsewhere() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)])
            let config = try TestConfig(
                daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port) + "[runtime]\ncooldown = 5\n"
            )
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
            daemon.waitForSettling()

            let pressed = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: pressed), "\(daemon.log)")
            // The local cycle's own 1 and 0 reach the link while the opening runs; the
            // next cycle is another client's.
            Thread.sleep(forTimeInterval: 0.3)
            try broker.publish(topic: statusTopic, payload: "1", qos: 1)
            Thread.sleep(forTimeInterval: 0.1)
            try broker.publish(topic: statusTopic, payload: "0", qos: 1)
            #expect(daemon.waitForLog("relay activated by someone else"), "\(daemon.log)")
            #expect(
                waitUntil(.seconds(10)) {
                    (try? daemon.history().contains { $0["source"] as? String == "elsewhere" }) == true
                },
                "\((try? daemon.history()) ?? [])\n\(daemon.log)"
            )
            #expect(try sim.activations().count == 1)
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("A local opening's late echo never refuses the next opening as 'another client's cycle'")
        func lateEchoDoesNotRefuseTheNextOpening() throws {
            // The explorer's seed 874: the ESP32's status reaches the broker late (here a
            // proxy holds each chunk 1 s), so an opening confirmed over UDP ends before its
            // own `1` arrives; an opening asked for while that echo's `1` is in and its `0`
            // not yet was refused (75, "the relay is active: another client's cycle").
            let broker = try MosquittoBroker(.plain)
            let proxy = try ChaosSlowProxy(to: broker.port, delay: .milliseconds(1000))
            defer { proxy.stop() }
            let sim = try Simulator(["--mqtt-host", "127.0.0.1", "--mqtt-port", String(proxy.port), "--hold-ms", "800"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
            daemon.waitForSettling()

            let first = try GateRunner.run(["open", "--json", "--config", config.path], environment: environment)
            #expect(first.status == 0, "\(first.summary)")
            // The first cycle's `1` reaches the link about 1 s after its trigger, its `0`
            // about 1.8 s after: ask in between.
            Thread.sleep(forTimeInterval: 0.45)
            let second = try GateRunner.run(["open", "--json", "--config", config.path], environment: environment)
            #expect(second.status == 0, "\(second.summary)\n\(daemon.log)")
            #expect(!second.stdout.contains("another client"), "\(second.stdout)")
            let activations = try sim.activations()
            #expect(activations.count == 2, "\(activations.map(\.via))")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }
    }
}
