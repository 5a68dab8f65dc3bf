import Foundation
import GateSystem
import GateTestSupport
import Synchronization
import Testing

/// `gate status` and `--watch` against real openings of the real simulator (docs/CONTRACT.md#commands, #runtime-files).
@Suite("gate status", .serialized)
struct GateStatusTests {
    @Test("No status file yet: ready, nothing last")
    func missingFileIsReady() throws {
        let run = try GateRunner.run(["status", "--format", "json"])
        #expect(run.status == 0, "\(run.summary)")
        let json = try run.json()
        #expect(json["state"] as? String == "ready")
        #expect(json["last"] is NSNull)
        let text = try GateRunner.run(["status"])
        #expect(text.stdout == "ready\n", "\(text.summary)")
    }

    @Test("After an opening: ready, last success via udp")
    func afterOpening() throws {
        let sim = try Simulator(["--hold-ms", "100"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let environment = GateRunner.isolatedEnvironment()
        let opened = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
        #expect(opened.status == 0, "\(opened.summary)")
        let run = try GateRunner.run(["status", "--format", "json"], environment: environment)
        #expect(run.status == 0, "\(run.summary)")
        let json = try run.json()
        #expect(json["state"] as? String == "ready")
        let last = try #require(json["last"] as? [String: Any])
        #expect(last["outcome"] as? String == "success")
        #expect(last["adapter"] as? String == "udp")
        #expect((last["duration_ms"] as? Int ?? 0) >= 100)
        let text = try GateRunner.run(["status"], environment: environment)
        #expect(text.stdout.hasPrefix("ready (last: success via udp, "), "\(text.summary)")
    }

    @Test("--watch --format waybar: one object per change, busy then ready; exits 0 when its reader leaves")
    func watchWaybar() throws {
        let sim = try Simulator(["--hold-ms", "1500"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "timeout = 5.0")
        let environment = GateRunner.isolatedEnvironment()
        let watcher = try PipedGate(["status", "--watch", "--format", "waybar"], environment: environment)
        let first = try #require(watcher.readLine(within: .seconds(5)), "no first line")
        #expect(try object(first)["class"] as? String == "ready")

        let opened = try GateRunner.run(["open", "--config", config.path], environment: environment)
        #expect(opened.status == 0, "\(opened.summary)")
        var objects: [[String: Any]] = []
        while let line = watcher.readLine(within: .seconds(3)) {
            objects.append(try object(line))
            if objects.last?["class"] as? String == "ready" { break }
        }
        let alts = objects.map { $0["alt"] as? String ?? "?" }
        #expect(alts.last == "ready", "\(alts)")
        #expect(alts.contains("waiting_for_relay_close"), "\(alts)")
        #expect(alts.dropLast().allSatisfy { $0 == "triggering" || $0 == "waiting_for_relay_close" }, "\(alts)")
        #expect(objects.dropLast().allSatisfy { $0["class"] as? String == "busy" })
        #expect(objects.allSatisfy { Set($0.keys) == ["text", "tooltip", "class", "alt"] })

        watcher.closeReader()
        let again = try GateRunner.run(["open", "--force", "--config", config.path], environment: environment)
        #expect(again.status == 0, "\(again.summary)")
        #expect(watcher.waitForExit(within: .seconds(5)) == 0, "the watcher must exit 0 once its panel is gone")
    }

    @Test("A reader hammering status.json during 50 openings never sees invalid JSON")
    func atomicReplacement() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
        let environment = GateRunner.isolatedEnvironment()
        let statusPath = try #require(environment["GATE_RUNTIME_DIR"]) + "/status.json"
        let hammer = Hammer(path: statusPath)
        hammer.start()
        for index in 0..<50 {
            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(run.status == 0, "opening \(index): \(run.summary)")
        }
        let result = hammer.stop()
        #expect(result.invalid.isEmpty, "torn reads: \(result.invalid.prefix(3))")
        #expect(result.parsed > 50, "the reader parsed only \(result.parsed) files")
        #expect(try sim.activations().count == 50)
    }

    @Test("kill -9 mid-cycle: ready with last interrupted, and --watch shows it within a second")
    func killedOpener() throws {
        let sim = try Simulator(["--hold-ms", "3000"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "timeout = 10.0")
        let environment = GateRunner.isolatedEnvironment()
        let statusPath = try #require(environment["GATE_RUNTIME_DIR"]) + "/status.json"
        let opener = try GateRunner.start(["open", "--config", config.path], environment: environment)
        try waitForState("waiting_for_relay_close", at: statusPath, within: .seconds(5))

        let watcher = try PipedGate(["status", "--watch", "--format", "json"], environment: environment)
        let busy = try object(try #require(watcher.readLine(within: .seconds(5))))
        #expect(busy["state"] as? String == "waiting_for_relay_close")

        kill(opener.pid, SIGKILL)
        _ = try? opener.finish(timeout: .seconds(5))
        let change = try object(
            try #require(watcher.readLine(within: .milliseconds(2500)), "--watch missed the dead opener")
        )
        #expect(change["state"] as? String == "ready")
        #expect((change["last"] as? [String: Any])?["outcome"] as? String == "interrupted")

        let run = try GateRunner.run(["status", "--format", "json"], environment: environment)
        let json = try run.json()
        #expect(json["state"] as? String == "ready")
        let last = try #require(json["last"] as? [String: Any])
        #expect(last["outcome"] as? String == "interrupted")
        #expect(last["source"] as? String == "cli")
        let text = try GateRunner.run(["status"], environment: environment)
        #expect(text.stdout == "ready (last: interrupted)\n")

        watcher.closeReader()
        #expect(watcher.waitForExit(within: .seconds(5)) == 0)

        // No stale lock and no cooldown: the next opening goes as soon as the relay is
        // free again (the killed opener's trigger holds the simulator's relay for 3 s).
        Thread.sleep(forTimeInterval: 3.2)
        let next = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
        #expect(next.status == 0, "\(next.summary)")
        #expect(try sim.activations().count == 2)
    }

    @Test("--watch wakes at reset_at: an error turns into ready without any file event")
    func watchResetAt() throws {
        let environment = GateRunner.isolatedEnvironment()
        let folder = try #require(environment["GATE_RUNTIME_DIR"])
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let now = Date()
        try writeStatus(in: folder, state: "error", resetAfter: .milliseconds(1200))
        let watcher = try PipedGate(["status", "--watch", "--format", "waybar"], environment: environment)
        let failed = try object(try #require(watcher.readLine(within: .seconds(5))))
        #expect(failed["class"] as? String == "failed")
        let ready = try object(try #require(watcher.readLine(within: .seconds(5)), "no line at reset_at"))
        #expect(ready["class"] as? String == "ready")
        let late = Date().timeIntervalSince(now)
        #expect(late >= 1.2 && late < 2.5, "shown after \(late) s")
        #expect(watcher.readLine(within: .milliseconds(1500)) == nil, "nothing changed: nothing printed")
    }

    @Test("--watch notices a released lock with no file event within the 1 s re-check")
    func watchLockRelease() throws {
        let environment = GateRunner.isolatedEnvironment()
        let folder = try #require(environment["GATE_RUNTIME_DIR"])
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // Read-only, so that neither taking nor dropping the lock makes an inotify event
        // the watcher listens to: only its timer can see the opener go.
        let lock = open(folder + "/lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX) == 0)
        try writeStatus(in: folder, state: "triggering", resetAfter: nil)
        let watcher = try PipedGate(["status", "--watch", "--format", "text"], environment: environment)
        #expect(watcher.readLine(within: .seconds(5)) == "opening: waiting for relay activation (udp)")
        #expect(watcher.readLine(within: .milliseconds(1500)) == nil, "a held lock is still busy")
        flock(lock, LOCK_UN)
        // Within 3 s: the 1 s re-check, with room for a loaded machine; without the
        // re-check the line would never come (no file event).
        #expect(watcher.readLine(within: .seconds(3)) == "ready (last: interrupted)")
    }

    @Test(
        "A failure written while the reader is about to open the file is shown: the time it is judged by is taken after the read",
        arguments: [["status", "--format", "text"], ["status", "--watch", "--format", "text"]]
    )
    func judgedAfterTheRead(arguments: [String]) async throws {
        var environment = GateRunner.isolatedEnvironment()
        let folder = try #require(environment["GATE_RUNTIME_DIR"])
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let shim = try PausedOpenShim(name: "status.json")
        environment["LD_PRELOAD"] = shim.path
        let reader = try PipedGate(arguments, environment: environment)
        #expect(await eventually(within: .seconds(10)) { shim.isHeld }, "the reader never opened status.json")
        // The record begins a millisecond after the reader stopped at the file: a reader
        // that took its `now` before the read sees a `since` ahead of it, a clock stepped
        // back, and would show the failure as over.
        usleep(2_000)
        try writeStatus(in: folder, state: "error", resetAfter: .seconds(60))
        shim.release()
        let line = reader.readLine(within: .seconds(10))
        #expect(line?.hasPrefix("error until ") == true, "shown: \(line ?? "nothing")")
        reader.closeReader()
        #expect(reader.waitForExit(within: .seconds(5)) == 0)
    }

    @Test("--watch survives its folder being deleted and created again")
    func watchFolderRecreated() throws {
        let environment = GateRunner.isolatedEnvironment()
        let folder = try #require(environment["GATE_RUNTIME_DIR"])
        let watcher = try PipedGate(["status", "--watch", "--format", "text"], environment: environment)
        #expect(watcher.readLine(within: .seconds(5)) == "ready", "no folder yet: ready")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try writeStatus(in: folder, state: "error", resetAfter: .seconds(60))
        #expect(watcher.readLine(within: .seconds(3))?.hasPrefix("error until ") == true)
        try FileManager.default.removeItem(atPath: folder)
        #expect(watcher.readLine(within: .seconds(3)) == "ready", "deleted folder: ready")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try writeStatus(in: folder, state: "timeout", resetAfter: .seconds(60))
        #expect(watcher.readLine(within: .seconds(3))?.hasPrefix("timeout until ") == true)
        watcher.closeReader()
        #expect(watcher.waitForExit(within: .seconds(5)) == 0)
    }

    @Test(
        "--watch paused while its folder is deleted and made again (the same inode number on ext4): later changes still show"
    )
    func watchFolderRecreatedWhilePaused() throws {
        let environment = GateRunner.isolatedEnvironment()
        let folder = try #require(environment["GATE_RUNTIME_DIR"])
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let watcher = try PipedGate(["status", "--watch", "--format", "text"], environment: environment)
        #expect(watcher.readLine(within: .seconds(5)) == "ready")
        try writeStatus(in: folder, state: "error", resetAfter: .seconds(60))
        #expect(watcher.readLine(within: .seconds(3))?.hasPrefix("error until ") == true)
        // The watcher reads the folder's deletion only once the new folder is there: by
        // its device and inode it may look like the folder it watched.
        kill(watcher.pid, SIGSTOP)
        #expect(waitUntil(.seconds(5)) { isStopped(watcher.pid) })
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try writeStatus(in: folder, state: "timeout", resetAfter: .seconds(60))
        kill(watcher.pid, SIGCONT)
        #expect(watcher.readLine(within: .seconds(3))?.hasPrefix("timeout until ") == true)
        try writeStatus(in: folder, state: "error", resetAfter: .seconds(60))
        #expect(
            watcher.readLine(within: .seconds(3))?.hasPrefix("error until ") == true,
            "a change in the folder made again was not seen"
        )
        watcher.closeReader()
        #expect(watcher.waitForExit(within: .seconds(5)) == 0)
    }
}

/// A status file as an opener writes it: a temporary file renamed into place, its times
/// from the clock and the formatter gate uses. Foundation's formatter rounds to the
/// nearest millisecond where gate truncates: a `since` up to half a millisecond ahead of
/// the reader's `now` would read as a clock stepped back, and the failure as over.
private func writeStatus(in folder: String, state: String, resetAfter: Duration?) throws {
    let now = WallClock.nowNanoseconds()
    let since = WallClock.iso8601(nanoseconds: now)
    let reset =
        resetAfter.map { delay -> String in
            let (seconds, attoseconds) = delay.components
            let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            return "\"\(WallClock.iso8601(nanoseconds: now + nanoseconds))\""
        } ?? "null"
    let last =
        state == "triggering"
        ? "null"
        : #"{"outcome":"\#(state)","error":"allAdaptersFailed","adapter":null,"#
            + #""duration_ms":2001,"finished_at":"\#(since)","source":"cli"}"#
    let text =
        #"{"state":"\#(state)","since":"\#(since)","source":"cli","pid":1,"adapter":"udp","#
        + #""reset_at":\#(reset),"last":\#(last)}"# + "\n"
    let temporary = folder + "/.tmp-test"
    try text.write(toFile: temporary, atomically: false, encoding: .utf8)
    guard rename(temporary, folder + "/status.json") == 0 else { throw GateRunner.Failure("rename failed") }
}

private func object(_ line: String) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
}

private func waitForState(_ state: String, at path: String, within timeout: Duration) throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if let data = FileManager.default.contents(atPath: path),
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            json["state"] as? String == state
        {
            return
        }
        Thread.sleep(forTimeInterval: 0.01)
    }
    throw GateRunner.Failure("status.json never said \(state)")
}

/// Reads and parses status.json in a tight loop on its own thread.
private final class Hammer: Sendable {
    struct Result {
        var parsed = 0
        var invalid: [String] = []
    }

    private let path: String
    private let state = Mutex((running: true, result: Result()))
    private let done = DispatchSemaphore(value: 0)

    init(path: String) {
        self.path = path
    }

    func start() {
        Thread.detachNewThread { [self] in
            while state.withLock({ $0.running }) {
                // Missing before the first opening writes it; never torn once it exists.
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                let valid = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["state"] is String
                state.withLock {
                    if valid {
                        $0.result.parsed += 1
                    } else {
                        $0.result.invalid.append(String(decoding: data, as: UTF8.self))
                    }
                }
            }
            done.signal()
        }
    }

    func stop() -> Result {
        state.withLock { $0.running = false }
        done.wait()
        return state.withLock { $0.result }
    }
}

/// A `gate` whose stdout is a pipe the test reads line by line and can close, as a panel does.
private final class PipedGate {
    private let process = Process()
    private var readEnd: Int32
    private var pending: [UInt8] = []
    private let exited = DispatchSemaphore(value: 0)

    init(_ arguments: [String], environment: [String: String]) throws {
        var ends: [Int32] = [0, 0]
        // pipe2 is not exported to Swift; FD_CLOEXEC keeps other tests' children off the pipe.
        guard pipe(&ends) == 0 else { throw GateRunner.Failure("pipe failed") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        readEnd = ends[0]
        let writer = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
        process.executableURL = try GateRunner.binary()
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = writer
        process.standardError = FileHandle.standardError
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        // Only the child may hold the write end, or the test would never see EOF.
        try writer.close()
    }

    var pid: pid_t { process.processIdentifier }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        if readEnd >= 0 { close(readEnd) }
    }

    /// The next line without its newline; nil at EOF or when `timeout` passes first.
    func readLine(within timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var pfd = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let milliseconds =
                Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1
            let ready = poll(&pfd, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(readEnd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
    }

    /// What a panel does when it quits: its end of the pipe goes away.
    func closeReader() {
        close(readEnd)
        readEnd = -1
    }

    /// The exit status, or nil when the process is still running after `timeout` (then killed).
    func waitForExit(within timeout: Duration) -> Int32? {
        let (seconds, attoseconds) = timeout.components
        let deadline =
            DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        guard exited.wait(timeout: deadline) == .success else {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }
}
