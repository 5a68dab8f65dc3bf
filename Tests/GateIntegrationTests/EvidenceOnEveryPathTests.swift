import Foundation
import GateTestSupport
import Testing

/// Evidence on every path (docs/CONTRACT.md#evidence-and-time, issue 28 item 6): a plain
/// `gate open` with `[mqtt]` watches the status topic during its UDP attempt too. Lossy
/// Wi-Fi: the ESP32 cycles and reports `1`/`0` on the status topic, the datagrams back are
/// lost. Before, the CLI did not watch, fell back to MQTT and cycled the relay twice.
/// Black-box: the real `gate` and `esp32-sim`, a real mosquitto, loopback only.
@Suite("Evidence on every path: the plain gate open watches the status topic", .serialized)
struct EvidenceOnEveryPathTests {
    enum Form: String, CaseIterable, CustomTestStringConvertible {
        /// No daemon anywhere: `gate open` opens by itself.
        case plain
        /// `--direct`: the same, said out loud.
        case direct
        var testDescription: String { rawValue }
        var arguments: [String] { self == .direct ? ["--direct"] : [] }
    }

    @Test(
        "UDP replies lost: one activation, confirmed through the status topic, no MQTT fallback",
        arguments: Form.allCases
    )
    func lostUDPRepliesConfirmedOnTheStatusTopic(_ form: Form) throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--fault", "udp:silent"])
        let config = try TestConfig(Self.configText(udpPort: sim.udpPort, mqttPort: broker.port))
        let run = try GateRunner.run(
            ["open", "--json", "--config", config.path] + form.arguments,
            environment: GateRunner.isolatedEnvironment()
        )
        // A fallback would publish at the end of the 2 s UDP budget: give a slow machine
        // time to show one.
        Thread.sleep(forTimeInterval: 0.5)

        let activations = try sim.activations()
        #expect(activations.count == 1, "\(activations.map(\.via))\n\(run.summary)")
        #expect(sim.receivedTriggers().count == 1, "\(sim.receivedTriggers())\n\(run.summary)")
        #expect(run.status == 0, "\(run.summary)")
        let json = try run.json()
        #expect(json["adapter"] as? String == "udp", "\(run.stdout)")
        let attempts = try NeverTwice.attempts(run)
        #expect(NeverTwice.strings(attempts, "adapter") == ["udp"], "\(run.stdout)")
    }

    @Test("A watch that is not live when the UDP trigger leaves forbids the fallback: 124, one activation")
    func unwatchedSilenceEndsTheOpening() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(NeverTwice.simulatorMQTT(broker) + ["--fault", "udp:silent"])
        // Every chunk between gate and the broker held 1.5 s: the SUBACK comes long after
        // the opening's wait for it, so the UDP trigger leaves unwatched.
        let proxy = try ChaosSlowProxy(to: broker.port, delay: .milliseconds(1500))
        defer { proxy.stop() }
        let config = try TestConfig(Self.configText(udpPort: sim.udpPort, mqttPort: proxy.port))
        let run = try GateRunner.run(
            ["open", "--json", "--direct", "--config", config.path],
            environment: GateRunner.isolatedEnvironment()
        )
        Thread.sleep(forTimeInterval: 0.5)

        let activations = try sim.activations()
        #expect(activations.count == 1, "\(activations.map(\.via))\n\(run.summary)")
        #expect(sim.receivedTriggers().count == 1, "\(sim.receivedTriggers())\n\(run.summary)")
        #expect(run.status == 124, "\(run.summary)")
        let json = try run.json()
        #expect(json["adapter"] as? String == "udp", "\(run.stdout)")
        #expect(NeverTwice.strings(try NeverTwice.attempts(run), "adapter") == ["udp"], "\(run.stdout)")
        #expect(run.stdout.contains("mqtt was not tried"), "\(run.stdout)")
    }

    static func configText(udpPort: UInt16, mqttPort: UInt16) -> String {
        """
        [udp]
        host = "127.0.0.1"
        port = \(udpPort)
        timeout = 2.0
        [mqtt]
        host = "127.0.0.1"
        port = \(mqttPort)
        [runtime]
        cooldown = 0
        """
    }
}
