import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A daemon on a slow card, settled, with a busy record whose opener is gone (no lock
/// held) put in place: the keeper rewrites it as `interrupted` (its tidy).
private func daemonTidying(on shim: SlowDiskShim, config: TestConfig) throws -> DaemonProcess {
    let daemon = try DaemonProcess(
        config: config.path,
        environment: GateRunner.isolatedEnvironment(["LD_PRELOAD": shim.path]),
        extraArguments: ["--log-level", "debug"]
    )
    try daemon.waitForReady()
    daemon.waitForSettling()
    let runtime = try #require(daemon.environment["GATE_RUNTIME_DIR"])
    let settled = waitUntil { daemon.status() != nil && !shim.inFsync && !shim.inRename }
    guard settled else {
        throw DaemonProcess.Failure("the daemon never wrote its first status file: \(daemon.log)")
    }
    let record =
        #"{"state":"triggering","since":"2026-11-26T04:00:00.000Z","source":"cli","pid":99999999,"#
        + #""adapter":"udp","reset_at":null,"last":null}"#
    try record.write(toFile: runtime + "/.forged", atomically: false, encoding: .utf8)
    guard rename(runtime + "/.forged", runtime + "/status.json") == 0 else {
        throw DaemonProcess.Failure("cannot put the record in place: \(String(cString: strerror(errno)))")
    }
    return daemon
}

/// `gate open --direct` beside the daemon, without the daemon's slow card.
private func openDirectly(_ daemon: DaemonProcess, config: TestConfig, sim: Simulator) throws {
    var opener = daemon.environment
    opener["LD_PRELOAD"] = nil
    let run = try GateRunner.run(["open", "--direct", "--config", config.path], environment: opener)
    #expect(run.status == 0, "\(run.summary)\n\(daemon.log)")
    #expect(!run.stderr.contains("another opening is in progress"), "\(run.stderr)")
    #expect(try sim.activations().count == 1)
}

extension DaemonTests {
    @Suite("The status keeper's tidy never refuses an opener (docs/CONTRACT.md#the-lock)")
    struct Tidy {
        /// Issue 28, item 7: the keeper held the opening lock across its fsync, and an opener
        /// arriving then was refused: "another opening is in progress: pid N (daemon)".
        @Test("An opener arriving during the tidy's fsync (800 ms) opens, and the stale tidy is dropped")
        func notDuringTheFsync() throws {
            let shim = try SlowDiskShim(fsyncMilliseconds: 800)
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let daemon = try daemonTidying(on: shim, config: config)
            #expect(waitUntil { shim.inFsync }, "the keeper never tidied: \(daemon.log)")
            try openDirectly(daemon, config: config, sim: sim)
            // What the keeper staged before the opening is not put over the opening's record.
            #expect(daemon.waitForLog("status file tidy dropped"), "\(daemon.log)")
            #expect(DaemonFiles.last(daemon.status())?["outcome"] as? String == "success", "\(daemon.log)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("An opener that meets the tidy holding the lock (a 300 ms rename) waits for it and opens")
        func waitsForTheRename() throws {
            let shim = try SlowDiskShim(fsyncMilliseconds: 0, renameMilliseconds: 300)
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let daemon = try daemonTidying(on: shim, config: config)
            #expect(waitUntil { shim.inRename }, "the keeper never tidied: \(daemon.log)")
            try openDirectly(daemon, config: config, sim: sim)
            #expect(daemon.waitForLog("status file tidied"), "\(daemon.log)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }
    }
}
