import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// `key=value` from a daemon log line (`id=7`).
private func value(_ key: String, in line: String) -> String? {
    guard let range = line.range(of: " \(key)=") else { return nil }
    return String(line[range.upperBound...].prefix { $0 != " " })
}

@Suite("Desktop notifications (docs/CONTRACT.md#desktop, [notify])", .serialized)
struct NotifyTests {
    /// dunst on a private bus, the simulator, and a daemon with `[notify]` that said so.
    private func notifyingDaemon() throws -> (SecretSession, Simulator, TestConfig, DaemonProcess) {
        let session = try SecretSession(notificationServer: true)
        let sim = try Simulator(["--hold-ms", "100"])
        let config = try TestConfig(
            daemonConfigText(udpPort: sim.udpPort, cooldown: 0, extra: "[notify]\ntimeout_ms = 0\n")
        )
        let daemon = try DaemonProcess(
            config: config.path,
            environment: session.environment(),
            extraArguments: ["--log-level", "debug"]
        )
        try daemon.waitForReady()
        daemon.waitForSettling()
        guard daemon.waitForLog("desktop notifications on") else {
            throw DaemonProcess.Failure("no notifications: \(daemon.log)")
        }
        return (session, sim, config, daemon)
    }

    /// Reloads with `every_opening = true`, then opens from the CLI: that opening is notified.
    private func everyOpeningThenOpen(_ daemon: DaemonProcess, config: TestConfig, sim: Simulator) throws {
        try daemonConfigText(
            udpPort: sim.udpPort,
            cooldown: 0,
            extra: "[notify]\ntimeout_ms = 0\nevery_opening = true\n"
        )
        .write(toFile: config.path, atomically: true, encoding: .utf8)
        #expect(daemon.waitForLog("configuration reloaded; changed: notify.every_opening"), "\(daemon.log)")
        let every = try GateRunner.run(["open", "--config", config.path], environment: daemon.environment)
        #expect(every.status == 0, "\(every.summary)")
        #expect(daemon.waitForLog("desktop notification shown", "source: cli"), "\(daemon.log)")
    }

    @Test(
        "A real notification server: one notification per opening, replaced as it goes; own openings only when they fail or with every_opening; reload"
    )
    func realServer() throws {
        let (session, sim, config, daemon) = try notifyingDaemon()
        let environment = daemon.environment

        func history(count: Int) throws -> [(id: Int, summary: String, body: String)] {
            try session.closeAllNotifications()
            var found: [(id: Int, summary: String, body: String)] = []
            _ = try waitUntil {
                found = try session.notificationHistory()
                return found.count >= count
            }
            return found
        }

        // 1. The button (someone else's opening): its start, then its end replacing it.
        let press = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: press), "\(daemon.log)")
        #expect(daemon.waitForLog("desktop notification shown", "Gate: relay cycle confirmed"), "\(daemon.log)")
        let button = daemon.logLines(containing: "desktop notification shown")
        #expect(button.count == 2, "\(daemon.log)")
        let id = try #require(button.first.flatMap { value("id", in: $0) })
        #expect(button.first.flatMap { value("replaces", in: $0) } == "0")
        #expect(button.last.flatMap { value("replaces", in: $0) } == id, "the end replaces the start: \(button)")
        #expect(button.last.flatMap { value("id", in: $0) } == id)
        #expect(button.first?.contains("Gate: opening (button)") == true, "\(button)")
        #expect(try session.displayedNotifications() == 1, "one notification on the screen for one opening")

        var shown = try history(count: 1)
        #expect(shown.count == 1, "\(shown)")
        #expect(shown.first.map { String($0.id) } == id)
        #expect(shown.first?.summary.hasPrefix("Gate: relay cycle confirmed (udp, ") == true, "\(shown)")
        #expect(shown.first?.body == "source: button")
        #expect(
            !shown.contains { $0.summary.contains("opened") },
            "the relay cycle is confirmed, not the gate's movement"
        )

        // 2. This desktop's own CLI: nothing when it succeeds; its failure in words.
        let own = try GateRunner.run(["open", "--config", config.path], environment: environment)
        #expect(own.status == 0, "\(own.stderr)")
        let dead = try TestConfig(daemonConfigText(udpPort: 1, cooldown: 0))
        let failed = try GateRunner.run(["open", "--config", dead.path], environment: environment)
        #expect(failed.status != 0)
        #expect(daemon.waitForLog("desktop notification shown", "Gate: opening failed (cli)"), "\(daemon.log)")
        shown = try history(count: 2)
        #expect(shown.count == 2, "the successful CLI opening made none: \(shown)")
        #expect(shown.first?.summary == "Gate: opening failed (cli)", "\(shown)")
        #expect(shown.first?.body.contains("no adapter reached the ESP32") == true, "\(shown)")

        // 3. every_opening on reload: the CLI's successful opening is notified too.
        try everyOpeningThenOpen(daemon, config: config, sim: sim)
        shown = try history(count: 3)
        #expect(shown.count == 3, "\(shown)")
        #expect(shown.first?.body == "source: cli", "\(shown)")

        // 4. [notify] removed: nothing; added again: the next opening only.
        try daemonConfigText(udpPort: sim.udpPort, cooldown: 0).write(
            toFile: config.path,
            atomically: true,
            encoding: .utf8
        )
        #expect(daemon.waitForLog("configuration reloaded; changed: notify (removed)"), "\(daemon.log)")
        #expect(daemon.waitForLog("desktop notifications off"), "\(daemon.log)")
        let unnoticed = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: unnoticed), "\(daemon.log)")
        try daemonConfigText(udpPort: sim.udpPort, cooldown: 0, extra: "[notify]\ntimeout_ms = 0\n")
            .write(toFile: config.path, atomically: true, encoding: .utf8)
        #expect(daemon.waitForLog("configuration reloaded; changed: notify (added)"), "\(daemon.log)")
        #expect(daemon.waitForLog("desktop notifications on", count: 2), "\(daemon.log)")
        let noticed = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: noticed), "\(daemon.log)")
        #expect(
            daemon.waitForLog("desktop notification shown", "Gate: relay cycle confirmed", count: 2),
            "\(daemon.log)"
        )
        shown = try history(count: 4)
        #expect(shown.count == 4, "the press while [notify] was absent made none: \(shown)")
        #expect(shown.first?.body == "source: button", "\(shown)")
        #expect(try sim.activations().count == 5)
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    /// Issue 28, item 8: a group member writes status.json; dunst reads bodies as markup.
    @Test(
        "Forged status records: their words reach dunst as text, and 200 forged failures in 4 s make at most 4 notifications"
    )
    func forgedRecords() throws {
        let (session, sim, _, daemon) = try notifyingDaemon()
        let environment = daemon.environment
        let runtime = try #require(environment["GATE_RUNTIME_DIR"])

        // As a member would: a temporary file renamed over status.json, 50 a second; each
        // its own words (dunst stacks identical notifications into one).
        for index in 0..<200 {
            let source = index == 199 ? "final" : "cli"
            let finished = String(format: "2026-11-26T04:00:%02d.%03dZ", index / 50, index % 50 * 20)
            let record =
                #"{"state":"ready","since":"\#(finished)","source":null,"pid":null,"adapter":null,"reset_at":null,"#
                + #""last":{"outcome":"error","error":"<b>forged</b>&#10;\#(index)","adapter":"udp","duration_ms":1,"#
                + #""finished_at":"\#(finished)","source":"\#(source)"}}"#
            let temporary = runtime + "/.forged-\(index)"
            try record.write(toFile: temporary, atomically: false, encoding: .utf8)
            #expect(rename(temporary, runtime + "/status.json") == 0)
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(daemon.waitForLog("desktop notification", "Gate: opening failed (final)"), "\(daemon.log)")
        #expect(daemon.waitForLog("desktop notifications held back"), "\(daemon.log)")

        try session.closeAllNotifications()
        var shown: [(id: Int, summary: String, body: String)] = []
        _ = try waitUntil {
            shown = try session.notificationHistory()
            return !shown.isEmpty
        }
        #expect(!shown.isEmpty && shown.count <= 4, "\(shown.count) notifications: \(shown)")
        for notification in shown {
            #expect(
                notification.body.hasPrefix("&lt;b&gt;forged&lt;/b&gt;&amp;#10;"),
                "dunst got markup: \(notification.body)"
            )
            #expect(!notification.body.contains("<"), "\(notification.body)")
        }
        #expect(try sim.activations().isEmpty)
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    /// Issue 28, item 2: a service that stopped ended the ServiceGroup, and with it the daemon.
    @Test(
        "A notify service that stops is started again: STATUS says so, the daemon runs on, and notifications and reloads reach it again"
    )
    func stoppedNotifierRestarts() throws {
        let session = try SecretSession(notificationServer: true)
        let listener = try NotifyListener()
        let sim = try Simulator(["--hold-ms", "100"])
        let config = try TestConfig(
            daemonConfigText(udpPort: sim.udpPort, cooldown: 0, extra: "[notify]\ntimeout_ms = 0\n")
        )
        // GATE_TEST_STOP (hidden, test only): the service's first run is cancelled half a second in.
        let daemon = try DaemonProcess(
            config: config.path,
            environment: session.environment(GateRunner.isolatedEnvironment(["GATE_TEST_STOP": "notify"])),
            extraArguments: ["--log-level", "debug"],
            notify: ["NOTIFY_SOCKET": listener.path]
        )
        try daemon.waitForReady()
        #expect(daemon.waitForLog("the notify service stopped"), "\(daemon.log)")
        #expect(
            listener.waitFor { $0.contains { $0.contains("STATUS=") && $0.contains("notify failed (1 failure") } },
            "\(listener.messages)"
        )
        #expect(daemon.waitForLog("the notify service runs again"), "\(daemon.log)")
        #expect(daemon.waitForLog("desktop notifications on", count: 2), "\(daemon.log)")

        // A reload reaches the service's second run.
        try everyOpeningThenOpen(daemon, config: config, sim: sim)
        try session.closeAllNotifications()
        var shown: [(id: Int, summary: String, body: String)] = []
        _ = try waitUntil {
            shown = try session.notificationHistory()
            return !shown.isEmpty
        }
        #expect(shown.map(\.body) == ["source: cli"], "\(shown)")
        #expect(daemon.isRunning, "\(daemon.log)")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("[notify] without a session bus: one warning naming the cause; openings and the status file go on")
    func noSessionBus() throws {
        let sim = try Simulator(["--hold-ms", "100"])
        let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0, extra: "[notify]\n"))
        let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
        try daemon.waitForReady()
        daemon.waitForSettling()
        #expect(
            daemon.waitForLog(
                "desktop notifications ([notify]) cannot be shown",
                "DBUS_SESSION_BUS_ADDRESS is not set"
            ),
            "\(daemon.log)"
        )
        let press = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: press), "\(daemon.log)")
        #expect(DaemonFiles.last(daemon.status())?["outcome"] as? String == "success")
        #expect(daemon.logLines(containing: "desktop notification").count == 1, "said once: \(daemon.log)")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("A notification server that went away: logged, the opening and the status file unharmed, tried again")
    func serverGone() throws {
        let session = try SecretSession(notificationServer: true)
        let sim = try Simulator(["--hold-ms", "100"])
        let config = try TestConfig(
            daemonConfigText(udpPort: sim.udpPort, cooldown: 0, extra: "[notify]\ntimeout_ms = 0\n")
        )
        let daemon = try DaemonProcess(
            config: config.path,
            environment: session.environment(),
            extraArguments: ["--log-level", "debug"]
        )
        try daemon.waitForReady()
        daemon.waitForSettling()
        try session.stopNotificationServer()
        let press = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: press), "\(daemon.log)")
        #expect(
            daemon.waitForLog("cannot show a desktop notification: Notify: org.freedesktop.DBus.Error"),
            "\(daemon.log)"
        )
        #expect(DaemonFiles.last(daemon.status())?["outcome"] as? String == "success")
        #expect(
            daemon.logLines(containing: "warning: cannot show a desktop notification").count == 1,
            "said once: \(daemon.log)"
        )
        let before = daemon.logLines(containing: "cannot show a desktop notification").count
        let again = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: again), "\(daemon.log)")
        #expect(
            daemon.waitForLog("cannot show a desktop notification", count: before + 1),
            "tried again at the next opening: \(daemon.log)"
        )
        #expect(try sim.activations().count == 2)
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test(
        "gate doctor asks the session bus for the notification server [notify] needs: names dunst, then says it is gone, and shows nothing"
    )
    func doctorNamesServer() throws {
        let session = try SecretSession(notificationServer: true)
        let sim = try Simulator(["--hold-ms", "100"])
        let config = try TestConfig.udp(host: sim.udpHost, port: sim.udpPort, extra: "[notify]\n")
        let served = try DoctorOutcome.run(config: config.path, environment: session.environment())
        #expect(served.run.status == 0, "\(served.run.summary)\n\(session.log)")
        #expect(served["notify"].status == "ok", "\(served.run.summary)")
        #expect(served["notify"].detail.contains("the notification server dunst"), "\(served["notify"].detail)")
        try session.closeAllNotifications()
        #expect(try session.notificationHistory().isEmpty, "the doctor showed a notification")

        try session.stopNotificationServer()
        let gone = try DoctorOutcome.run(config: config.path, environment: session.environment())
        #expect(gone.run.status == 69, "\(gone.run.summary)")
        #expect(gone["notify"].status == "fail")
        // Nobody owns the name now; the bus may try to start dunst from its activation
        // file (no display there: it dies), or say that nobody can: either way named.
        #expect(gone["notify"].detail.contains("org.freedesktop.Notifications"), "\(gone["notify"].detail)")
        #expect(gone["notify"].fix?.contains("remove [notify] from \(config.path)") == true, "\(gone["notify"])")

        let noBus = try DoctorOutcome.run(config: config.path)
        #expect(noBus.run.status == 69, "\(noBus.run.summary)")
        #expect(noBus["notify"].status == "fail")
        #expect(noBus["notify"].detail.contains("there is no D-Bus session bus here"), "\(noBus["notify"].detail)")
        #expect(noBus["notify"].fix?.contains("gate-user.service") == true, "\(noBus["notify"])")

        let without = try DoctorOutcome.run(
            config: try TestConfig.udp(host: sim.udpHost, port: sim.udpPort).path,
            environment: session.environment()
        )
        #expect(without.run.status == 0, "\(without.run.summary)")
        #expect(without["notify"].status == "skip")
        #expect(without["notify"].detail.contains("no [notify] table"))
        #expect(try sim.activations().isEmpty, "the doctor sent something to the ESP32")
    }
}
