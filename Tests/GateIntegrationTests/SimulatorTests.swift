import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The simulator against docs/CONTRACT.md#protocol and #the-relay-simulator, over real sockets. Timing checks are
/// lower bounds only ("at least the hold"); windows for "nothing arrives" are generous.
@Suite(.serialized)
struct SimulatorTests {
    private func bytes(_ datagrams: [UDPProbe.Datagram]) -> [[UInt8]] { datagrams.map(\.bytes) }

    @Test func answersActivatedThenReleasedAfterTheHold() throws {
        let sim = try Simulator(["--hold-ms", "400"])
        #expect(sim.stdoutBeforeReady == "ready\n")
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)

        let sentAt = try probe.send([0x01])
        let answers = try probe.receive(count: 2, within: .seconds(5))

        try #require(bytes(answers) == [[0x01], [0x00]], "stderr:\n\(sim.stderrText)")
        #expect(answers.allSatisfy { $0.from == sim.udpEndpoint }, "replies must come from the sim's own port")
        #expect(answers[1].arrival - answers[0].arrival >= .milliseconds(400))
        #expect(answers[1].arrival - sentAt >= .milliseconds(400))
        // Nothing after the release.
        #expect(try probe.receiveAll(within: .milliseconds(300)).isEmpty)
        #expect(try sim.activations().count == 1)
        #expect(try sim.stop() == .exited(0))
    }

    @Test func worksOverIPv6Loopback() throws {
        let sim = try Simulator(["--hold-ms", "100"], udp: "[::1]:0")
        #expect(sim.udpHost == "::1")
        let probe = try UDPProbe(host: "::1", port: sim.udpPort)
        try probe.send([0x01])
        #expect(bytes(try probe.receive(count: 2, within: .seconds(5))) == [[0x01], [0x00]])
        let activations = try sim.activations()
        #expect(activations.map(\.from) == [try probe.localEndpoint()])
        #expect(try sim.stop() == .exited(0))
    }

    @Test func acceptsLocalhostAndWildcardAddresses() throws {
        for udp in ["localhost:0", "0.0.0.0:0"] {
            let sim = try Simulator(["--hold-ms", "50"], udp: udp)
            let probe = try UDPProbe(host: "127.0.0.1", port: sim.udpPort)
            try probe.send([0x01])
            #expect(bytes(try probe.receive(count: 2, within: .seconds(5))) == [[0x01], [0x00]], "--udp \(udp)")
            #expect(try sim.stop() == .exited(0))
        }
    }

    @Test func silentActivatesButNeverAnswers() throws {
        let sim = try Simulator(["--hold-ms", "200", "--fault", "silent"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(try probe.receiveAll(within: .seconds(1)).isEmpty)
        #expect(try sim.activations().count == 1)
    }

    @Test func garbageAnswersOne0x7f() throws {
        let sim = try Simulator(["--hold-ms", "200", "--fault", "garbage"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(bytes(try probe.receiveAll(within: .milliseconds(1200))) == [[0x7f]])
        #expect(try sim.activations().count == 1)
    }

    @Test func noReleaseAnswersOnlyActivatedAndStillCycles() throws {
        let sim = try Simulator(["--hold-ms", "300", "--fault", "no-release"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        #expect(bytes(try probe.receiveAll(within: .milliseconds(1300))) == [[0x01]])
        // The relay released internally, so a new trigger activates it again.
        try probe.send([0x01])
        #expect(bytes(try probe.receive(count: 1, within: .seconds(5))) == [[0x01]])
        #expect(try sim.activations().count == 2)
    }

    @Test func duplicateSendsEveryAnswerTwice() throws {
        let sim = try Simulator(["--hold-ms", "200", "--fault", "duplicate"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        let answers = try probe.receive(count: 4, within: .seconds(5))
        #expect(bytes(answers) == [[0x01], [0x01], [0x00], [0x00]])
        #expect(try probe.receiveAll(within: .milliseconds(300)).isEmpty)
        if answers.count == 4 {
            #expect(answers[2].arrival - answers[1].arrival >= .milliseconds(200))
        }
        #expect(try sim.activations().count == 1)
    }

    @Test func slowReleaseHoldsThreeSeconds() throws {
        // --hold-ms is deliberately short: slow-release must not use it.
        let sim = try Simulator(["--hold-ms", "100", "--fault", "slow-release"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        let answers = try probe.receive(count: 2, within: .seconds(8))
        try #require(bytes(answers) == [[0x01], [0x00]])
        #expect(answers[1].arrival - answers[0].arrival >= .milliseconds(3000))
    }

    @Test func triggerWhileHeldIsIgnored() throws {
        let sim = try Simulator(["--hold-ms", "1000"])
        let first = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let second = try UDPProbe(host: sim.udpHost, port: sim.udpPort)

        try first.send([0x01])
        try #require(bytes(try first.receive(count: 1, within: .seconds(5))) == [[0x01]])
        try second.send([0x01])  // the relay is held now
        #expect(bytes(try first.receive(count: 1, within: .seconds(5))) == [[0x00]])
        #expect(try second.receiveAll(within: .milliseconds(300)).isEmpty, "an ignored trigger gets no answer")
        #expect(try sim.activations().map(\.from) == [try first.localEndpoint()])

        // Ready again after the release; datagrams are handled in order, so by the time
        // this is answered the ignored trigger has been logged.
        try second.send([0x01])
        #expect(bytes(try second.receive(count: 2, within: .seconds(5))) == [[0x01], [0x00]])
        #expect(try sim.activations().map(\.from) == [try first.localEndpoint(), try second.localEndpoint()])
        #expect(sim.stderrText.contains("ignored: relay held"))
    }

    @Test func clientGoneBeforeReleaseDoesNotDisturbTheNext() throws {
        let sim = try Simulator(["--hold-ms", "200"])
        do {
            let leaving = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
            try leaving.send([0x01])
            try #require(bytes(try leaving.receive(count: 1, within: .seconds(5))) == [[0x01]])
        }  // closed before its 0x00, which then draws an ICMP "port unreachable"
        let next = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        #expect(try next.receiveAll(within: .milliseconds(600)).isEmpty)
        try next.send([0x01])
        #expect(bytes(try next.receive(count: 2, within: .seconds(5))) == [[0x01], [0x00]])
        #expect(try sim.activations().count == 2)
        #expect(try sim.stop() == .exited(0))
    }

    @Test func otherDatagramsAreIgnored() throws {
        let sim = try Simulator(["--hold-ms", "100"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x00])
        try probe.send([0x02, 0x01])
        try probe.send([0x7f])
        #expect(try probe.receiveAll(within: .milliseconds(500)).isEmpty)
        #expect(try sim.activations().isEmpty)
        #expect(sim.stderrText.contains("not a trigger"))
    }

    @Test func triggerLogHasOneLinePerActivation() throws {
        let before = Date()
        let sim = try Simulator(["--hold-ms", "50"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        for _ in 0..<3 {
            try probe.send([0x01])
            try #require(bytes(try probe.receive(count: 2, within: .seconds(5))) == [[0x01], [0x00]])
        }
        let after = Date()

        let lines = try sim.triggerLogLines()
        #expect(lines.count == 3)
        let activations = try sim.activations()
        #expect(activations.count == 3)
        let pattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for activation in activations {
            #expect(activation.via == "udp")
            #expect(activation.from == (try probe.localEndpoint()))
            #expect(activation.at.wholeMatch(of: pattern) != nil, "at: \(activation.at)")
            let at = try #require(formatter.date(from: activation.at))
            // A sanity window on the wall clock (is it UTC, is it now), not a latency bound.
            #expect(at >= before.addingTimeInterval(-1) && at <= after.addingTimeInterval(1))
        }
        #expect(lines.first?.hasPrefix(#"{"via":"udp","at":""#) == true)
        let attributes = try FileManager.default.attributesOfItem(atPath: sim.triggerLogPath)
        #expect((attributes[.posixPermissions] as? Int).map { $0 & 0o600 } == 0o600)
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func signalStopsCleanly(signal: Int32) throws {
        let sim = try Simulator(["--hold-ms", "5000"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        try #require(bytes(try probe.receive(count: 1, within: .seconds(5))) == [[0x01]])
        // Stopping while the relay is held must still be a clean exit.
        #expect(try sim.stop(signal: signal) == .exited(0))
        #expect(sim.stderrText.contains("stopping"))
    }

    @Test func unknownFaultIsAUsageError() throws {
        let result = try Simulator.run(["--fault", "smoke"])
        #expect(result.termination == .exited(64))
        for mode in ["none", "silent", "no-release", "garbage", "slow-release", "duplicate", "udp-off", "mqtt-off"] {
            #expect(result.stderr.contains(mode), "valid modes are listed: \(mode)")
        }
        #expect(result.stdout.isEmpty)
    }

    @Test(arguments: [
        ["--hold-ms", "60001"], ["--hold-ms", "-1"], ["--hold-ms", "soon"],
        ["--udp", "8080"], ["--udp", "::1:8080"], ["--udp", "127.0.0.1:70000"], ["--udp", "gate.example:8080"],
    ])
    func invalidArgumentsAreUsageErrors(arguments: [String]) throws {
        let result = try Simulator.run(arguments)
        #expect(result.termination == .exited(64), "\(arguments): \(result.stderr)")
        #expect(!result.stdout.contains("ready"))
    }

    @Test func portInUseFailsWithoutReady() throws {
        let sim = try Simulator()
        let result = try Simulator.run(["--udp", sim.udpEndpoint])
        #expect(result.termination == .exited(1))
        #expect(result.stderr.contains("cannot listen"))
        #expect(!result.stdout.contains("ready"))
        // The helper reports the early exit instead of waiting for a ready that never comes.
        #expect(throws: Simulator.Failure.self) { try Simulator(udp: sim.udpEndpoint) }
    }

    @Test func helpExplainsFaultModesAndTheTriggerLog() throws {
        let result = try Simulator.run(["--help"])
        #expect(result.termination == .exited(0))
        for word in ["slow-release", "duplicate", "trigger log", #""via":"udp""#, "ready"] {
            #expect(result.stdout.contains(word), "--help mentions \(word)")
        }
    }

    // MARK: - MQTT options (the MQTT behaviour itself is in SimulatorMQTTTests)

    @Test(arguments: [
        ["--mqtt-port", "1883"], ["--mqtt-username", "u"], ["--fault", "mqtt:garbage"], ["--fault", "udp-off"],
        ["--mqtt-host", "h", "--fault", "udp-off", "--fault", "mqtt-off"],
        ["--fault", "silent", "--fault", "udp:garbage"],
        ["--fault", "mqtt:udp-off"], ["--fault", "tcp:silent"], ["--mqtt-host", "h", "--mqtt-port", "0"],
        ["--mqtt-host", "h", "--mqtt-trigger-topic", "a/#"],
        ["--mqtt-host", "h", "--mqtt-status-topic", "iot/house/gate/esp32/trigger"],
    ])
    func inconsistentOptionsAreUsageErrors(arguments: [String]) throws {
        let result = try Simulator.run(["--udp", "127.0.0.1:0"] + arguments)
        #expect(result.termination == .exited(64), "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func tlsDefaultsToPort8883() throws {
        let broker = try MosquittoBroker(.tls)
        let arguments = ["--mqtt-host", "127.0.0.1", "--mqtt-tls-ca", broker.caFile!]
        // Whether or not something answers on 8883 here, the log names the port tried.
        do {
            let sim = try Simulator(arguments, readyTimeout: .seconds(12))
            #expect(sim.stderrText.contains("127.0.0.1:8883"))
        } catch let failure as Simulator.Failure {
            #expect(failure.description.contains("127.0.0.1:8883"))
        }
    }

    @Test func helpDescribesTheMQTTSide() throws {
        let result = try Simulator.run(["--help"])
        #expect(result.termination == .exited(0))
        // Help text is wrapped to the terminal: compare with the line breaks taken out.
        let text = result.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for word in [
            "--mqtt-host", "--mqtt-port", "--mqtt-username", "--mqtt-tls-ca", "--mqtt-trigger-topic",
            "--mqtt-status-topic", "ESP32_SIM_MQTT_PASSWORD", "udp-off", "mqtt-off", "udp:silent",
            "mqtt:garbage", "relay change is published", #""via":"mqtt""#,
        ] {
            #expect(text.contains(word), "--help mentions \(word)")
        }
    }
}
