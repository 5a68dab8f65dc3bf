import Foundation
import GateSystem
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `timeout` written just before the wall clock was stepped back by an hour (NTP
/// after a Pi booted with a stale clock): its `since` and `reset_at` lie an hour ahead.
private func statusWrittenBeforeAClockStep() -> String {
    let since = WallClock.nowNanoseconds() + 3600 * 1_000_000_000
    let reset = since + 3 * 1_000_000_000
    return """
        {"state":"timeout","since":"\(WallClock.iso8601(nanoseconds: since))","source":"cli","pid":1,"adapter":"udp",\
        "reset_at":"\(WallClock.iso8601(nanoseconds: reset))","last":{"outcome":"timeout","error":"operationTimeout",\
        "adapter":"udp","duration_ms":2000,"finished_at":"\(WallClock.iso8601(nanoseconds: since))","source":"cli"}}
        """
}

/// Issue 18 item 8: what a service running for years meets.
@Suite("Long-running leftovers (issue 18 item 8)")
struct LongRunTests {
    @Test("A backward clock step does not keep `timeout` on show for as long as the step")
    func clockStepBack() throws {
        let environment = GateRunner.isolatedEnvironment()
        let runtime = environment["GATE_RUNTIME_DIR"]!
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        try statusWrittenBeforeAClockStep().write(toFile: runtime + "/status.json", atomically: true, encoding: .utf8)
        let run = try GateRunner.run(["status", "--format", "json"], environment: environment)
        #expect(run.status == 0, "\(run.summary)")
        #expect(try run.json()["state"] as? String == "ready", "\(run.summary)")
    }

    @Test("The daemon's status keeper tidies a status file written before a backward clock step")
    func keeperAfterClockStep() throws {
        let environment = GateRunner.isolatedEnvironment()
        let runtime = environment["GATE_RUNTIME_DIR"]!
        let config = try TestConfig(daemonConfigText(udpPort: 9))
        let daemon = try DaemonProcess(config: config.path, environment: environment)
        try daemon.waitForReady()
        try statusWrittenBeforeAClockStep().write(toFile: runtime + "/status.json", atomically: true, encoding: .utf8)
        // jq readers see the file itself: the keeper rewrites it within the reset delay (3 s).
        let tidied = waitUntil(.seconds(15)) {
            DaemonFiles.status(runtimeDirectory: runtime)?["state"] as? String == "ready"
        }
        #expect(tidied, "\(String(describing: DaemonFiles.status(runtimeDirectory: runtime)))\n\(daemon.log)")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("Temporary files of killed writers (.tmp-*) older than a minute are removed by the daemon; nothing else is")
    func staleTemporariesCleaned() throws {
        let environment = GateRunner.isolatedEnvironment()
        let runtime = environment["GATE_RUNTIME_DIR"]!
        let state = environment["GATE_STATE_DIR"]!
        let fm = FileManager.default
        try fm.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        try fm.createDirectory(atPath: state, withIntermediateDirectories: true)
        let old = Date().addingTimeInterval(-600)
        func make(_ path: String, age: Date?) throws {
            try Data("{\"state\":\"rea".utf8).write(to: URL(fileURLWithPath: path))
            if let age { try fm.setAttributes([.modificationDate: age], ofItemAtPath: path) }
        }
        try make(runtime + "/.tmp-AbC123", age: old)
        try make(state + "/.tmp-XyZ789", age: old)
        try make(runtime + "/.tmp-fresh1", age: nil)  // a writer may be at work on it
        try make(runtime + "/notes-old", age: old)  // not a temporary
        try fm.createSymbolicLink(atPath: runtime + "/.tmp-link00", withDestinationPath: runtime + "/notes-old")
        let config = try TestConfig(daemonConfigText(udpPort: 9))
        let daemon = try DaemonProcess(config: config.path, environment: environment)
        try daemon.waitForReady()
        let cleaned = waitUntil(.seconds(15)) {
            !fm.fileExists(atPath: runtime + "/.tmp-AbC123") && !fm.fileExists(atPath: state + "/.tmp-XyZ789")
        }
        #expect(cleaned, "\((try? fm.contentsOfDirectory(atPath: runtime)) ?? [])\n\(daemon.log)")
        #expect(fm.fileExists(atPath: runtime + "/.tmp-fresh1"))
        #expect(fm.fileExists(atPath: runtime + "/notes-old"))
        #expect(
            (try? fm.destinationOfSymbolicLink(atPath: runtime + "/.tmp-link00")) != nil,
            "a link is not a writer's temporary"
        )
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("Auto-reload survives replacing the configuration's folder (IN_MOVE_SELF / IN_IGNORED)")
    func reloadAfterFolderReplaced() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("gate-etc-\(UUID().uuidString)")
        let folder = root.appendingPathComponent("gate").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let path = folder + "/gate.toml"
        try daemonConfigText(udpPort: 9, cooldown: 1).write(toFile: path, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(config: path, environment: GateRunner.isolatedEnvironment())
        try daemon.waitForReady()
        // What a configuration manager or a restore does: the whole folder replaced.
        try FileManager.default.moveItem(atPath: folder, toPath: root.appendingPathComponent("gate.old").path)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try daemonConfigText(udpPort: 9, cooldown: 2).write(toFile: path, atomically: true, encoding: .utf8)
        #expect(
            daemon.waitForLog("configuration reloaded; changed: runtime.cooldown ", "trigger=\"file changed\""),
            "\(daemon.log)"
        )
        // And the next edit in the new folder is seen too.
        try daemonConfigText(udpPort: 9, cooldown: 3).write(toFile: path, atomically: true, encoding: .utf8)
        #expect(
            daemon.waitForLog(
                "configuration reloaded; changed: runtime.cooldown ",
                "trigger=\"file changed\"",
                count: 2
            ),
            "\(daemon.log)"
        )
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("Auto-reload follows a symlinked configuration re-pointed to a file in another folder")
    func reloadAfterSymlinkRepointed() throws {
        let config = try SymlinkedDaemonConfig(daemonConfigText(udpPort: 9, cooldown: 1))
        defer { try? FileManager.default.removeItem(at: config.directory) }
        let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
        try daemon.waitForReady()
        let otherFolder = config.directory.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: otherFolder, withIntermediateDirectories: true)
        let otherTarget = otherFolder.appendingPathComponent("gate.toml").path
        try daemonConfigText(udpPort: 9, cooldown: 2).write(toFile: otherTarget, atomically: true, encoding: .utf8)
        // Re-pointed atomically, as `ln -sfn` plus `mv -T` would.
        let temporaryLink = config.path + ".new"
        try FileManager.default.createSymbolicLink(atPath: temporaryLink, withDestinationPath: otherTarget)
        #expect(rename(temporaryLink, config.path) == 0)
        #expect(
            daemon.waitForLog("configuration reloaded; changed: runtime.cooldown ", "trigger=\"file changed\""),
            "\(daemon.log)"
        )
        // An edit of the new target is seen; one of the old target is not the configuration any more.
        try daemonConfigText(udpPort: 9, cooldown: 3).write(toFile: otherTarget, atomically: true, encoding: .utf8)
        #expect(
            daemon.waitForLog(
                "configuration reloaded; changed: runtime.cooldown ",
                "trigger=\"file changed\"",
                count: 2
            ),
            "\(daemon.log)"
        )
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("The watchdog is fed only while the services' own loops make progress; a wedged loop stops it")
    func wedgedServiceStopsTheWatchdog() throws {
        let listener = try NotifyListener()
        let config = try TestConfig(daemonConfigText(udpPort: 9))
        // GATE_TEST_WEDGE: a hidden, test-only fault switch (Sources/GateDaemon/Progress.swift):
        // the named service's loop stops taking inputs that many seconds after start.
        let environment = GateRunner.isolatedEnvironment(["GATE_TEST_WEDGE": "button@3"])
        let daemon = try DaemonProcess(
            config: config.path,
            environment: environment,
            notify: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "1000000"]
        )
        let started = ContinuousClock.now
        try daemon.waitForReady()
        let fed = listener.waitFor(timeout: .seconds(10)) { $0.filter { $0 == "WATCHDOG=1" }.count >= 2 }
        #expect(fed, "\(listener.messages)\n\(daemon.log)")
        // Wedged at 3 s; progress is stale 0.5 s later. From 6 s on, no WATCHDOG=1 may come.
        Thread.sleep(
            until: Date().addingTimeInterval(
                max(0, Double((started + .seconds(6) - ContinuousClock.now).components.seconds) + 0.5)
            )
        )
        listener.drain()
        let before = listener.messages.filter { $0 == "WATCHDOG=1" }.count
        Thread.sleep(forTimeInterval: 3)
        listener.drain()
        let after = listener.messages.filter { $0 == "WATCHDOG=1" }.count
        #expect(
            after == before,
            "WATCHDOG=1 still sent while the button's loop is wedged (\(before) then \(after))\n\(daemon.log)"
        )
        #expect(daemon.log.contains("watchdog not fed"), "\(daemon.log)")
        daemon.send(SIGKILL)
        _ = daemon.waitForExit()
    }

    @Test(
        "A blackholed broker leaves no thread behind per press: the daemon's fresh connection is bounded by the budget"
    )
    func blackholedBrokerLeavesNoThreads() throws {
        let blackhole = try BlackholedTCPPort()
        // MQTT only, so that every press goes to the broker; the link's own connection
        // hangs as well (one thread, whatever the number of presses).
        let config = try TestConfig(
            daemonConfigText(
                udpPort: nil,
                mqttPort: blackhole.port,
                extra: """
                    [runtime]
                    cooldown = 0
                    reset_delay = 0.1
                    """ + "\n"
            ).replacingOccurrences(of: "port = \(blackhole.port)\n", with: "port = \(blackhole.port)\ntimeout = 1.0\n")
        )
        let daemon = try DaemonProcess(config: config.path, environment: GateRunner.isolatedEnvironment())
        try daemon.waitForReady()
        daemon.waitForSettling()
        func threads() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task").count) ?? -1
        }
        let presses = 6
        var before = 0
        for number in 0..<presses {
            let edge = try daemon.press()
            #expect(daemon.waitForPressHandled(edgeNs: edge), "\(daemon.log)")
            // After the first press: the concurrency runtime's own threads are up by then.
            if number == 0 { before = threads() }
        }
        Thread.sleep(forTimeInterval: 1)
        let after = threads()
        let outcomes = daemon.logLines(containing: "source=button", " outcome=", "duration_ms=")
        #expect(outcomes.count == presses, "\(daemon.log)")
        #expect(outcomes.allSatisfy { $0.contains("outcome=error") }, "\(outcomes)")
        // Without a bound, each press leaves a thread in connect(2) for about two minutes.
        #expect(after - before <= 1, "threads \(before) -> \(after) over \(presses - 1) presses\n\(daemon.log)")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }
}
