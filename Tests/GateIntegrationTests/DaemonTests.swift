import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `gate daemon` as a process: the real binary, its button fed from a FIFO of real
/// `struct gpioevent_data` records (read by libgpiod's `gpiod_line_event_read_fd`), the
/// real simulator, real brokers. Every suite of daemon tests is nested here, so that they
/// run one at a time: each starts processes that want the machine's two cores.
@Suite("gate daemon", .serialized)
enum DaemonTests {}

extension DaemonTests {
    @Suite("The push button")
    struct Button {
        @Test("One press opens the simulated gate: one activation, status ready with source button, a history line")
        func pressOpens() throws {
            let sim = try Simulator()
            let config = try TestConfig.udp(host: sim.udpHost, port: sim.udpPort)
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            daemon.waitForSettling()

            try daemon.press()
            let done = waitUntil {
                let status = daemon.status()
                return status?["state"] as? String == "ready"
                    && DaemonFiles.last(status)?["source"] as? String == "button"
            }
            #expect(
                done,
                "status never showed the button's finished opening: \(String(describing: daemon.status()))\n\(daemon.log)"
            )
            let last = try #require(DaemonFiles.last(daemon.status()))
            #expect(last["outcome"] as? String == "success")
            #expect(last["adapter"] as? String == "udp")
            #expect(try sim.activations().map(\.via) == ["udp"], "exactly one activation")
            #expect(daemon.logLines(containing: "gate: info: button pressed; opening").count == 1, "\(daemon.log)")

            let history = try daemon.history()
            #expect(history.count == 1, "\(history)")
            #expect(history.first?["source"] as? String == "button")
            #expect(history.first?["outcome"] as? String == "success")
            #expect(history.first?["adapter"] as? String == "udp")

            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
            #expect(daemon.log.contains("gate: info: daemon stopped"))
        }

        @Test("A bounce storm of 20 edges within 30 ms is one press")
        func bounceStorm() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            // No cooldown: a second press out of the storm must not be hidden by it.
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            daemon.waitForSettling()

            // Falling first (a press, active low), alternating, 1.5 ms apart: 28.5 ms in all,
            // ending on a rising edge (released).
            let start = monotonicNowNs()
            try daemon.writeEdges(
                (0..<20).map { index in
                    (index % 2 == 0 ? .falling : .rising, start + UInt64(index) * 1_500_000)
                }
            )
            #expect(
                waitUntil {
                    DaemonFiles.last(daemon.status())?["source"] as? String == "button"
                        && daemon.status()?["state"] as? String == "ready"
                },
                "the storm opened nothing: \(daemon.log)"
            )
            #expect(try sim.activations().count == 1)

            // A clean press afterwards: once its opening is done, every consequence of the
            // storm is behind it (edges and debounce timers are handled in order).
            let clean = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: clean), "\(daemon.log)")
            #expect(try sim.activations().count == 2, "the storm must give one opening, the clean press another")
            #expect(daemon.logLines(containing: "button pressed; opening").count == 2, "\(daemon.log)")
            #expect(
                daemon.logLines(containing: "button press ignored").isEmpty,
                "the storm made more than one press:\n\(daemon.log)"
            )
        }

        @Test("A press while `gate open` holds the lock is ignored and logged; one activation in all")
        func pressDuringCLIOpening() throws {
            let sim = try Simulator(["--hold-ms", "1500"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment)
            try daemon.waitForReady()
            daemon.waitForSettling()

            let cli = try GateRunner.start(["open", "--config", config.path, "--json"], environment: environment)
            let busy = waitUntil {
                let status = daemon.status()
                return status?["state"] as? String == "waiting_for_relay_close" && status?["source"] as? String == "cli"
            }
            #expect(busy, "the CLI's opening never reached the relay: \(String(describing: daemon.status()))")
            try daemon.press()
            #expect(daemon.waitForLog("button press ignored"), "\(daemon.log)")
            // Refused by the lock the CLI holds (not by the cooldown, not by the button's own slot).
            let lines = daemon.logLines(containing: "button press ignored")
            #expect(lines.count == 1 && lines[0].contains("another opening is in progress"), "\(lines)")

            let run = try cli.finish(timeout: .seconds(20))
            #expect(run.status == 0, "\(run.summary)")
            #expect(try sim.activations().count == 1)
            #expect(daemon.logLines(containing: "button pressed; opening").isEmpty, "\(daemon.log)")
            #expect(try daemon.history().map { $0["source"] as? String } == ["cli"])
        }

        @Test("Edges in the first 500 ms after the start are ignored (boot settling)")
        func bootSettling() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            // Stamped inside the window whenever they arrive: the daemon started after
            // `spawnedNs`, and the debouncer goes by the kernel timestamps.
            let base = daemon.spawnedNs
            try daemon.writeEdges([
                (.falling, base + 100_000_000), (.rising, base + 250_000_000),
                (.falling, base + 300_000_000), (.rising, base + 420_000_000),
            ])
            daemon.waitForSettling()

            // A press after the window: once it has opened, the early edges had their turn.
            let real = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: real), "\(daemon.log)")
            #expect(try sim.activations().count == 1, "only the press after the settling opens")
            #expect(daemon.logLines(containing: "button pressed; opening").count == 1, "\(daemon.log)")
            #expect(daemon.logLines(containing: "button press ignored").isEmpty, "\(daemon.log)")
            #expect(try daemon.history().map { $0["source"] as? String } == ["button"])
        }

        @Test("SIGTERM during an opening: the opening completes, then exit 0")
        func sigtermMidOpening() throws {
            let sim = try Simulator(["--hold-ms", "1500"])
            let config = try TestConfig.udp(host: sim.udpHost, port: sim.udpPort)
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            daemon.waitForSettling()

            try daemon.press()
            let busy = waitUntil {
                let status = daemon.status()
                return ["triggering", "waiting_for_relay_close"].contains(status?["state"] as? String ?? "")
                    && status?["source"] as? String == "button"
            }
            #expect(busy, "the opening never started: \(daemon.log)")
            daemon.send(SIGTERM)
            #expect(daemon.waitForExit(timeout: .seconds(30)) == .exited(0), "\(daemon.log)")

            let status = daemon.status()
            #expect(status?["state"] as? String == "ready", "\(String(describing: status))")
            let last = DaemonFiles.last(status)
            #expect(last?["outcome"] as? String == "success")
            #expect(last?["source"] as? String == "button")
            #expect(try sim.activations().count == 1)
            #expect(daemon.log.contains("letting the opening in flight finish"), "\(daemon.log)")
            #expect(daemon.log.contains("gate: info: daemon stopped"))
            #expect(try daemon.history().map { $0["outcome"] as? String } == ["success"])
        }
    }

    @Suite("Bad starts")
    struct BadStarts {
        @Test(
            "A configuration that does not validate: exit 78, the key named",
            arguments: [
                ("[udp]\nhost = \"127.0.0.1\"\nport = 99999\n", "udp.port"),
                ("[udp]\nhost = \"127.0.0.1\"\ncolour = \"green\"\n", "udp.colour"),
            ]
        )
        func invalidConfiguration(text: String, key: String) throws {
            let config = try TestConfig(text)
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            #expect(daemon.waitForExit() == .exited(78), "\(daemon.log)")
            #expect(daemon.log.contains(key), "\(daemon.log)")
            #expect(!daemon.log.contains("daemon ready"))
        }

        @Test("--button-events naming a regular file: exit 69, the path named")
        func buttonSourceNotAFIFO() throws {
            let config = try TestConfig.udp(host: "127.0.0.1", port: 8080)
            let regular = config.directory.appendingPathComponent("not-a-fifo").path
            #expect(FileManager.default.createFile(atPath: regular, contents: Data(repeating: 0, count: 16)))
            let daemon = try DaemonProcess(
                config: config.path,
                environment: GateRunner.isolatedEnvironment(),
                buttonFIFO: false,
                extraArguments: ["--button-events", regular]
            )
            #expect(daemon.waitForExit() == .exited(69), "\(daemon.log)")
            #expect(daemon.log.contains(regular), "\(daemon.log)")
            #expect(!daemon.log.contains("daemon ready"))
        }
    }
}
