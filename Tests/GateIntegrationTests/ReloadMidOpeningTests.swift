import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Openings outlive reloads (docs/CONTRACT.md#gate-daemon, issue 28 item 5): a reload
/// mid-opening, even of a key the link does not use (`mqtt.timeout`), replaced the warm
/// link under the opening: an MQTT opening whose cycle completed was reported 124.
/// Black-box: the real daemon, the simulator and a real mosquitto, loopback only.
@Suite("Openings outlive reloads", .serialized)
struct ReloadMidOpeningTests {
    enum Change: String, CaseIterable, CustomTestStringConvertible {
        /// A key the link does not use: the link is never replaced.
        case mqttTimeout
        /// A key the link uses: replaced, but only once the opening ended.
        case clientIDPrefix
        var testDescription: String { rawValue }
        var extra: String {
            switch self {
            case .mqttTimeout: "timeout = 7.0\n"
            case .clientIDPrefix: "client_id_prefix = \"gate-reloaded-\"\n"
            }
        }
    }

    @Test(
        "A reload of [mqtt] mid-opening: the warm-link opening completes (0), one activation",
        arguments: Change.allCases
    )
    func warmLinkOpeningOutlivesTheReload(_ change: Change) throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--hold-ms", "1500"])
        let base = daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0)
        let config = try HardLinkedDaemonConfig(base)
        let environment = GateRunner.isolatedEnvironment()
        let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
        try daemon.waitForReady()
        #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")

        let opener = try GateRunner.start(
            ["open", "--config", config.path, "--via", "mqtt", "--json"],
            environment: environment
        )
        // The relay is held 1.5 s: reload while the opening waits for its 0.
        #expect(daemon.waitForLog("state changed", "state=waiting_for_relay_close"), "\(daemon.log)")
        try config.replace(
            base.replacingOccurrences(of: "port = \(broker.port)\n", with: "port = \(broker.port)\n" + change.extra)
        )
        daemon.send(SIGHUP)
        #expect(daemon.waitForLog("configuration reloaded"), "\(daemon.log)")
        let run = try opener.finish(timeout: .seconds(20))

        #expect(run.status == 0, "\(run.summary)\n\(daemon.log)")
        #expect(try sim.activations().count == 1)
        switch change {
        case .mqttTimeout:
            #expect(daemon.logLines(containing: "MQTT link replaced").isEmpty, "\(daemon.log)")
        case .clientIDPrefix:
            #expect(daemon.waitForLog("MQTT link replaced"), "\(daemon.log)")
            #expect(daemon.waitForLog("gate: info: MQTT link up", count: 2), "\(daemon.log)")
        }
        // The link serves the next opening as before.
        let next = try GateRunner.run(["open", "--config", config.path, "--via", "mqtt"], environment: environment)
        #expect(next.status == 0, "\(next.summary)\n\(daemon.log)")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }
}

/// The fault explorer's seed 35 (docs/CONTRACT.md#evidence-and-time): the daemon paused
/// through its UDP attempt, its relay's `1` and `0` waiting unread in the link's socket.
/// On resuming it must read them before judging the silence: one activation, never the
/// MQTT fallback's second. Timing decides which thread runs first on SIGCONT; the rule
/// holds either way, so the test cannot pass by luck when it breaks only sometimes:
/// it repeats.
@Suite("A paused daemon reads its watch before judging silence", .serialized)
struct PausedDaemonSilenceTests {
    @Test("SIGSTOP through the UDP attempt (UDP replies lost): one activation, no fallback")
    func pausedThroughTheUDPAttempt() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--fault", "udp:silent"])
        let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
        let environment = GateRunner.isolatedEnvironment()
        let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
        try daemon.waitForReady()
        #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")

        for round in 1...3 {
            let opener = try GateRunner.start(["open", "--config", config.path, "--json"], environment: environment)
            #expect(daemon.waitForLog("state changed", "state=triggering", count: round), "\(daemon.log)")
            kill(daemon.pid, SIGSTOP)
            // Past the 2 s UDP budget while paused: the ESP32's 1 and 0 reach the socket.
            Thread.sleep(forTimeInterval: 3)
            kill(daemon.pid, SIGCONT)
            let run = try opener.finish(timeout: .seconds(30))
            Thread.sleep(forTimeInterval: 0.5)
            #expect(try sim.activations().count == round, "round \(round): \(run.summary)\n\(daemon.log)")
            let adapter = try run.json()["adapter"] as? String
            #expect(run.status != 0 || adapter == "udp", "\(run.stdout)")
        }
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }
}
