import Foundation
import GateTestSupport
import Testing

/// What a person reads after `gate open`, compared exactly: what happened, each
/// adapter's part, and what to do next; no error names (those stay in `--json`).
@Suite("gate open's words for people", .serialized)
struct GateOpenWordsTests {
    /// The names that belong to `--json` and the logs, never to text for a person.
    static let identifiers = [
        "configurationMissing", "udpConnectionFailed", "mqttConnectionFailed", "allAdaptersFailed",
        "operationTimeout", "operationInProgress", "invalidResponse", "no_answer", "invalid_response",
        "waiting_for_relay_close", "misconfigured",
    ]

    /// Durations and times left vary from run to run: `(N ms)`, `(+N ms)`, `N s left`.
    static func steady(_ text: String) -> String {
        text.replacing(/\(\+?\d+ ms\)/) { match in match.output.hasPrefix("(+") ? "(+N ms)" : "(N ms)" }
            .replacing(/\d+\.\d s left/, with: "N s left")
    }

    static func expectNoIdentifiers(_ run: GateRun, sourceLocation: SourceLocation = #_sourceLocation) {
        for name in identifiers {
            #expect(
                !run.stdout.contains(name) && !run.stderr.contains(name),
                "\(name) shown to a person:\n\(run.summary)",
                sourceLocation: sourceLocation
            )
        }
    }

    @Test("124, a silent ESP32: the address to check and `gate doctor`, after saying the relay may have cycled")
    func silentUDP() throws {
        let sim = try Simulator(["--fault", "silent"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "timeout = 0.5")
        let run = try GateRunner.run(["open", "--config", config.path])
        #expect(run.status == 124, "\(run.summary)")
        #expect(
            Self.steady(run.stdout) == """
                trigger sent via udp: waiting for the relay to activate (+N ms)
                relay cycle not confirmed via udp (+N ms)

                """,
            "\(run.summary)"
        )
        #expect(
            Self.steady(run.stderr) == """
                gate: a trigger was sent but the relay cycle was not confirmed; the relay may have cycled
                  udp (N ms): no answer within 500 ms
                  mqtt (not tried): not configured (no [mqtt] table)
                Check the gate before trying again. Is udp.host (127.0.0.1:\(sim.udpPort)) the ESP32, and is it on? \
                Run `gate doctor`.

                """,
            "\(run.summary)"
        )
        Self.expectNoIdentifiers(run)
    }

    @Test("69, nothing listens: the network's refusal, and that a retry is safe once fixed")
    func nothingListens() throws {
        let port = try freeUDPPort()
        let config = try TestConfig.udp(host: "127.0.0.1", port: port)
        let run = try GateRunner.run(["open", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        #expect(
            Self.steady(run.stderr) == """
                gate: no adapter reached the ESP32
                  udp (N ms): nothing listens at 127.0.0.1:\(port) (ICMP port unreachable)
                  mqtt (not tried): not configured (no [mqtt] table)
                Nothing was sent that could move the gate: try again once the cause above is fixed; \
                `gate doctor` checks the whole set-up.

                """,
            "\(run.summary)"
        )
        Self.expectNoIdentifiers(run)
    }

    @Test("76, an answer outside the protocol: who answers at the address, and `gate doctor`")
    func garbage() throws {
        let sim = try Simulator(["--fault", "garbage"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let run = try GateRunner.run(["open", "--config", config.path])
        #expect(run.status == 76, "\(run.summary)")
        #expect(
            Self.steady(run.stderr) == """
                gate: the ESP32 answered outside the protocol
                  udp (N ms): the ESP32 answered byte 0x7f, expected 0x01 or 0x00
                Check the gate before trying again. Is it the ESP32 that answers at 127.0.0.1:\(sim.udpPort) \
                (udp.host, udp.port)? Run `gate doctor`.

                """,
            "\(run.summary)"
        )
        Self.expectNoIdentifiers(run)
    }

    @Test("75, the cooldown: the time left, and both ways on")
    func cooldown() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 30")
        let environment = GateRunner.isolatedEnvironment()
        #expect(try GateRunner.run(["open", "--config", config.path], environment: environment).status == 0)
        let run = try GateRunner.run(["open", "--config", config.path], environment: environment)
        #expect(run.status == 75, "\(run.summary)")
        #expect(
            Self.steady(run.stderr) == """
                gate: cooldown after the last relay cycle: N s left; nothing was sent: try again then, \
                or use --force to skip the cooldown

                """,
            "\(run.summary)"
        )
        Self.expectNoIdentifiers(run)
    }

    @Test("78: --via an adapter that is not configured, a file that does not parse, no file at all")
    func configuration() throws {
        let sim = try Simulator()
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let forced = try GateRunner.run(["open", "--via", "mqtt", "--config", config.path])
        #expect(forced.status == 78, "\(forced.summary)")
        #expect(
            forced.stderr == """
                gate: no usable configuration
                  mqtt (not tried): not configured (no [mqtt] table)
                Add the [mqtt] table to the configuration (`gate config path` names the file), or leave out --via.

                """,
            "\(forced.summary)"
        )
        let broken = try TestConfig("[udp]\nhost = \"127.0.0.1\"\nport = \"eighty\"\n")
        let invalid = try GateRunner.run(["open", "--config", broken.path])
        #expect(invalid.status == 78, "\(invalid.summary)")
        #expect(invalid.stderr.hasPrefix("gate: no usable configuration\n  \(broken.path):3: udp.port: "))
        #expect(
            invalid.stderr.hasSuffix("\nFix the file where it is named above; `gate config check` confirms it.\n"),
            "\(invalid.summary)"
        )
        let none = try GateRunner.run(["open"])
        #expect(none.status == 78, "\(none.summary)")
        #expect(
            none.stderr.hasSuffix(
                ")\nWrite one with `gate config init --udp HOST` (HOST: the ESP32's address), then edit it.\n"
            ),
            "\(none.summary)"
        )
        for run in [forced, invalid, none] { Self.expectNoIdentifiers(run) }
        #expect(try sim.activations().isEmpty)
    }

    @Test("Nothing sent (a missing MQTT password): no 'trigger sent' line, ever")
    func nothingSentNoTrigger() throws {
        let config = try TestConfig("[mqtt]\nhost = \"127.0.0.1\"\nport = 1883\nusername = \"gate\"\n")
        let run = try GateRunner.run(["open", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        #expect(Self.steady(run.stdout) == "failed (+N ms)\n", "\(run.summary)")
        Self.expectNoIdentifiers(run)
    }
}
