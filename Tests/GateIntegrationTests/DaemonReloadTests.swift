import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension DaemonTests {
    @Suite("Configuration reload and systemd notification")
    struct Reload {
        @Test("SIGHUP: a broken file keeps the running configuration; a good one is audited and takes effect")
        func sighup() throws {
            let first = try Simulator(["--hold-ms", "100"])
            let second = try Simulator(["--hold-ms", "100"])
            // Edited through a hard link in another folder: no inotify event where the daemon
            // looks, so every reload below is SIGHUP's.
            let config = try HardLinkedDaemonConfig(daemonConfigText(udpPort: first.udpPort, cooldown: 0))
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            daemon.waitForSettling()

            // 1. A file that does not validate: the error is logged, the old configuration stays.
            try config.replace(
                daemonConfigText(udpPort: first.udpPort, cooldown: 0).replacingOccurrences(
                    of: "port = \(first.udpPort)",
                    with: "port = 99999"
                )
            )
            daemon.send(SIGHUP)
            #expect(
                daemon.waitForLog("gate: error: configuration not reloaded; keeping the running one", "trigger=SIGHUP"),
                "\(daemon.log)"
            )
            #expect(
                daemon.logLines(containing: "configuration not reloaded").first?.contains("udp.port") == true,
                "\(daemon.log)"
            )
            let kept = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: kept), "\(daemon.log)")
            #expect(try first.activations().count == 1, "the press must still reach the first simulator")
            #expect(DaemonFiles.last(daemon.status())?["outcome"] as? String == "success")

            // 2. A good file pointing at the second simulator: audited by key, then used.
            try config.replace(daemonConfigText(udpPort: second.udpPort, cooldown: 0))
            daemon.send(SIGHUP)
            #expect(
                daemon.waitForLog("gate: notice: configuration reloaded; changed: udp.port ", "trigger=SIGHUP"),
                "\(daemon.log)"
            )
            let moved = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: moved), "\(daemon.log)")
            #expect(
                try second.activations().count == 1,
                "the press after the reload goes to the new port: \(daemon.log)"
            )
            #expect(try first.activations().count == 1)

            // 3. Only the cooldown changes: the next press meets the new, long cooldown.
            try config.replace(daemonConfigText(udpPort: second.udpPort, cooldown: 600))
            daemon.send(SIGHUP)
            #expect(
                daemon.waitForLog("gate: notice: configuration reloaded; changed: runtime.cooldown ", "trigger=SIGHUP"),
                "\(daemon.log)"
            )
            try daemon.press()
            #expect(daemon.waitForLog("button press ignored", "cooldown"), "\(daemon.log)")
            #expect(try second.activations().count == 1, "the refused press sent nothing")
            #expect(try daemon.history().map { $0["source"] as? String } == ["button", "button"])
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("The file rewritten without SIGHUP (inotify): audited when good, refused when broken")
        func fileChange() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            daemon.waitForSettling()

            try daemonConfigText(udpPort: sim.udpPort, cooldown: 1, extra: "").replacingOccurrences(
                of: "port = \(sim.udpPort)\n",
                with: "port = \(sim.udpPort)\ntimeout = 1.5\n"
            ).write(toFile: config.path, atomically: true, encoding: .utf8)
            #expect(
                daemon.waitForLog(
                    "gate: notice: configuration reloaded; changed: udp.timeout, runtime.cooldown ",
                    "trigger=\"file changed\""
                ),
                "\(daemon.log)"
            )

            try "[udp]\nhost = \"127.0.0.1\"\nport = \(sim.udpPort)\ncolour = \"green\"\n"
                .write(toFile: config.path, atomically: true, encoding: .utf8)
            #expect(
                daemon.waitForLog(
                    "configuration not reloaded; keeping the running one",
                    "trigger=\"file changed\"",
                    "udp.colour"
                ),
                "\(daemon.log)"
            )
            let press = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: press), "\(daemon.log)")
            #expect(try sim.activations().count == 1)
            #expect(daemon.logLines(containing: "configuration reloaded").count == 1, "\(daemon.log)")
        }

        @Test("A symlinked configuration: an edit of the link's target is seen without SIGHUP")
        func symlinkTarget() throws {
            let config = try SymlinkedDaemonConfig(daemonConfigText(udpPort: 8080, cooldown: 0))
            let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
            try daemon.waitForReady()
            try config.replace(daemonConfigText(udpPort: 8081, cooldown: 0))
            #expect(
                daemon.waitForLog(
                    "gate: notice: configuration reloaded; changed: udp.port ",
                    "trigger=\"file changed\""
                ),
                "\(daemon.log)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("NOTIFY_SOCKET: READY=1 first, WATCHDOG=1, RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 last")
        func notifications() throws {
            let listener = try NotifyListener()
            let config = try TestConfig.udp(host: "127.0.0.1", port: 8080)
            let daemon = try DaemonProcess(
                config: config.path,
                environment: GateRunner.isolatedEnvironment(),
                notify: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "400000"]
            )
            #expect(
                listener.waitFor { $0.contains { $0.contains("WATCHDOG=1") } },
                "\(listener.messages)\n\(daemon.log)"
            )
            let fieldsOf = { (message: String) in message.split(separator: "\n").map(String.init) }
            #expect(
                listener.messages.first.map(fieldsOf)?.contains("READY=1") == true,
                "READY=1 first: \(listener.messages)"
            )

            daemon.send(SIGHUP)
            #expect(
                listener.waitFor { messages in
                    messages.filter { fieldsOf($0).contains("READY=1") }.count >= 2
                },
                "\(listener.messages)\n\(daemon.log)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
            listener.drain()

            let messages = listener.messages
            // Watchdog pings may come between any two others; the rest is one fixed order.
            let milestones = messages.map(fieldsOf).filter { !($0 == ["WATCHDOG=1"]) }
            let kinds = milestones.map { fields in
                fields.first { ["READY=1", "RELOADING=1", "STOPPING=1"].contains($0) } ?? fields.joined(separator: "|")
            }
            #expect(kinds == ["READY=1", "RELOADING=1", "READY=1", "STOPPING=1"], "\(messages)")
            #expect(
                milestones.count > 1 && milestones[1].contains { $0.hasPrefix("MONOTONIC_USEC=") },
                "RELOADING=1 carries MONOTONIC_USEC: \(messages)"
            )
            #expect(
                messages.last.map(fieldsOf)?.contains("STOPPING=1") == true,
                "nothing after STOPPING=1: \(messages)"
            )
            #expect(messages.filter { $0 == "WATCHDOG=1" }.count >= 1)
        }

        @Test(
            "A SIGHUP as soon as READY=1 arrives is a reload, never the end of the daemon",
            .serialized,
            arguments: 0..<8
        )
        func sighupRightAfterReady(round: Int) throws {
            let listener = try NotifyListener()
            let config = try TestConfig.udp(host: "127.0.0.1", port: 8080)
            let daemon = try DaemonProcess(
                config: config.path,
                environment: GateRunner.isolatedEnvironment(),
                notify: ["NOTIFY_SOCKET": listener.path]
            )
            // systemd may run ExecReload= the moment it hears READY=1.
            let ready = listener.waitFor(timeout: .seconds(20)) { messages in
                messages.contains { $0.split(separator: "\n").contains("READY=1") }
            }
            #expect(ready, "\(daemon.log)")
            daemon.send(SIGHUP)
            let reloaded = {
                daemon.logLines(containing: "configuration reloaded; nothing changed", "trigger=SIGHUP").count == 1
            }
            waitUntil { reloaded() || !daemon.isRunning }
            #expect(
                reloaded(),
                "round \(round): \(String(describing: daemon.waitForExit(timeout: .seconds(1))))\n\(daemon.log)"
            )
            #expect(daemon.stop() == .exited(0), "round \(round): \(daemon.log)")
        }
    }
}
