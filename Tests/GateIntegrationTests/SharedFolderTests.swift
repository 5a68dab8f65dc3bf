import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The runtime and state folders are shared by every member of group `gate`, so nothing
/// in them is trusted (docs/CONTRACT.md#runtime-files). Each test plants what a hostile member could plant and
/// runs the real `gate` binary against it.
@Suite("Shared folders: nothing in them is trusted", .serialized)
struct SharedFolderTests {
    // MARK: links and other files where a file should be

    @Test("A symlink or hard link planted as lock or history.jsonl: the victim is never written, re-moded or created")
    func plantedLinks() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
        for (name, inState) in [("lock", false), ("history.jsonl", true)] {
            for kind in ["symlink", "dangling symlink", "hard link"] {
                let folders = try SharedFolders()
                let planted = (inState ? folders.state : folders.runtime) + "/" + name
                let victim = folders.scratch + "/victim"
                let missing = folders.scratch + "/nowhere/created"
                try FileManager.default.createDirectory(
                    atPath: folders.scratch + "/nowhere",
                    withIntermediateDirectories: true
                )
                try "precious\n".write(toFile: victim, atomically: false, encoding: .utf8)
                chmod(victim, 0o600)
                switch kind {
                case "symlink": try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: victim)
                case "dangling symlink":
                    try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: missing)
                default: try FileManager.default.linkItem(atPath: victim, toPath: planted)
                }

                let run = try GateRunner.run(
                    ["open", "--config", config.path],
                    environment: folders.environment,
                    timeout: .seconds(20)
                )
                let what = "\(kind) as \(name)"
                #expect(
                    try String(contentsOfFile: victim, encoding: .utf8) == "precious\n",
                    "\(what): the victim was written\n\(run.summary)"
                )
                #expect(
                    mode(of: victim) == 0o600,
                    "\(what): the victim was re-moded to \(String(mode(of: victim) ?? 0, radix: 8))"
                )
                #expect(
                    !FileManager.default.fileExists(atPath: missing),
                    "\(what): a file was created through the link"
                )
                #expect(run.stderr.contains(planted), "\(what): the error must name \(planted)\n\(run.summary)")
                let words = kind == "hard link" ? "hard links" : "symbolic link"
                #expect(run.stderr.contains(words), "\(what): the error must say what is wrong\n\(run.summary)")
                if inState {
                    // The history is the opening's record, not its permission: the opening goes on.
                    #expect(run.status == 0, "\(what)\n\(run.summary)")
                } else {
                    #expect(run.status == 78, "\(what): no opening without a usable lock\n\(run.summary)")
                }
            }
        }
        #expect(try sim.activations().count == 3, "one opening per planted history link, none for a planted lock")
    }

    @Test("A FIFO or a folder where lock should be: exit 78 at once, naming the path")
    func lockNotARegularFile() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        for kind in ["FIFO", "directory"] {
            let folders = try SharedFolders()
            let lock = folders.runtime + "/lock"
            if kind == "FIFO" {
                try #require(mkfifo(lock, 0o660) == 0)
            } else {
                try FileManager.default.createDirectory(atPath: lock, withIntermediateDirectories: false)
            }
            let run = try GateRunner.run(
                ["open", "--config", config.path],
                environment: folders.environment,
                timeout: .seconds(10)
            )
            #expect(run.status == 78, "\(kind)\n\(run.summary)")
            #expect(run.stderr.contains("\(lock): it is a \(kind), not a regular file"), "\(kind)\n\(run.summary)")
        }
        #expect(try sim.activations().isEmpty)
    }

    @Test("gate doctor opens lock the way an opener does: a planted symlink is a runtime failure naming it")
    func doctorSymlinkLock() throws {
        let folders = try SharedFolders()
        try FileManager.default.createSymbolicLink(
            atPath: folders.runtime + "/lock",
            withDestinationPath: "/etc/hostname"
        )
        let config = try TestConfig.udp(host: "127.0.0.1", port: 8080)
        let doctor = try DoctorOutcome.run(config: config.path, environment: folders.environment)
        #expect(doctor["runtime"].status == "fail", "\(doctor.run.summary)")
        #expect(doctor["runtime"].detail.contains("\(folders.runtime)/lock"), "\(doctor["runtime"].detail)")
        #expect(
            doctor["runtime"].detail.contains("it is a symbolic link, not a regular file"),
            "\(doctor["runtime"].detail)"
        )
    }

    @Test("lock deleted during an opening: a second opener still exits 75, and readers still see the opening")
    func deletedLock() throws {
        let sim = try Simulator(["--hold-ms", "1500"])
        let config = try TestConfig.udp(
            host: "127.0.0.1",
            port: sim.udpPort,
            extra: "timeout = 5.0\n[runtime]\ncooldown = 0"
        )
        let folders = try SharedFolders()
        let long = try GateRunner.start(["open", "--config", config.path], environment: folders.environment)
        #expect(
            waitUntil(.seconds(10)) { statusState(folders.runtime) == "waiting_for_relay_close" },
            "the first opening never reached the relay"
        )
        try #require(unlink(folders.runtime + "/lock") == 0, "rm lock: errno \(errno)")

        let second = try GateRunner.run(
            ["open", "--config", config.path, "--json"],
            environment: folders.environment,
            timeout: .seconds(20)
        )
        let shown = try GateRunner.run(["status", "--format", "json"], environment: folders.environment)
        #expect(long.process.isRunning, "the checks must happen while the first opening holds the lock")
        #expect(second.status == 75, "a second opener got in after rm lock\n\(second.summary)")
        #expect(
            try shown.json()["state"] as? String == "waiting_for_relay_close",
            "gate status must still see the opening\n\(shown.summary)"
        )

        let first = try long.finish(timeout: .seconds(20))
        #expect(first.status == 0, "\(first.summary)")
        #expect(try sim.activations().count == 1, "one activation only")
    }

    // MARK: hostile contents

    @Test("reset_at in year 2300: gate status shows ready, the daemon keeps running and tidies the file")
    func timeBeyondRange() throws {
        let folders = try SharedFolders()
        let status =
            #"{"state":"timeout","since":"2300-01-01T00:00:00.000Z","source":"cli","pid":1,"adapter":"udp","#
            + #""reset_at":"2300-01-01T00:00:03.000Z","last":null}"# + "\n"
        try status.write(toFile: folders.runtime + "/status.json", atomically: false, encoding: .utf8)

        let shown = try GateRunner.run(["status", "--format", "json"], environment: folders.environment)
        #expect(shown.status == 0, "\(shown.summary)")
        #expect(
            try shown.json()["state"] as? String == "ready",
            "an out-of-range time makes the record invalid\n\(shown.summary)"
        )

        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort))
        let daemon = try DaemonProcess(config: config.path, environment: folders.environment, buttonFIFO: false)
        try daemon.waitForReady()
        let tidied = waitUntil(.seconds(10)) {
            let record = DaemonFiles.status(runtimeDirectory: folders.runtime)
            return record?["state"] as? String == "ready" && record?["reset_at"] is NSNull
        }
        #expect(
            tidied,
            "the status keeper must replace the invalid record: \(String(describing: DaemonFiles.status(runtimeDirectory: folders.runtime)))"
        )
        Thread.sleep(forTimeInterval: 0.5)
        #expect(
            daemon.isRunning,
            "the daemon died: \(String(describing: daemon.waitForExit(timeout: .seconds(1))))\n\(daemon.log)"
        )
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    @Test("A FIFO as status.json: gate status fails at once naming it; gate open still opens and replaces it")
    func statusFIFO() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let folders = try SharedFolders()
        let path = folders.runtime + "/status.json"
        try #require(mkfifo(path, 0o664) == 0)

        for format in ["text", "waybar"] {
            let shown = try GateRunner.run(
                ["status", "--format", format],
                environment: folders.environment,
                timeout: .seconds(10)
            )
            #expect(shown.status == 74, "\(format)\n\(shown.summary)")
            #expect(shown.stderr.contains("cannot use \(path): it is a FIFO, not a regular file"), "\(shown.summary)")
            #expect(shown.wall < .seconds(3))
        }

        let watcher = try GateRunner.start(["status", "--watch"], environment: folders.environment)
        let saw = waitUntil(.seconds(5)) {
            ((try? String(contentsOf: watcher.directory.appendingPathComponent("stderr"), encoding: .utf8)) ?? "")
                .contains("\(path): it is a FIFO")
        }
        #expect(saw, "gate status --watch must say what is wrong")
        kill(watcher.pid, SIGTERM)
        _ = try? watcher.finish(timeout: .seconds(5))

        let opened = try GateRunner.run(
            ["open", "--config", config.path],
            environment: folders.environment,
            timeout: .seconds(10)
        )
        #expect(opened.status == 0, "a status file that cannot be read does not stop the opening\n\(opened.summary)")
        #expect(opened.stderr.contains("\(path): it is a FIFO"), "\(opened.summary)")
        #expect(opened.wall < .seconds(5))
        #expect(statusState(folders.runtime) == "ready", "the opening replaces the FIFO with its status")
        #expect(try sim.activations().count == 1)
    }

    @Test("Control characters in history.jsonl never reach the terminal; valid entries still show")
    func historyControlCharacters() throws {
        let folders = try SharedFolders()
        func line(_ source: String) -> String {
            #"{"at":"2026-01-01T00:00:00.000Z","source":"\#(source)","uid":0,"adapter":"udp","outcome":"success","error":null,"duration_ms":5}"#
        }
        let planted = [
            line(#"\u001b]0;pwned\u0007x"#), line(#"a\u009b31mb"#), line(#"a\rb"#), line("ok-source"),
            line(String(repeating: "x", count: 5000)),
        ]
        try (planted.joined(separator: "\n") + "\n").write(
            toFile: folders.state + "/history.jsonl",
            atomically: false,
            encoding: .utf8
        )
        for arguments in [["history"], ["history", "--json"]] {
            let run = try GateRunner.run(arguments, environment: folders.environment)
            #expect(run.status == 0, "\(run.summary)")
            let bytes = Array(run.stdout.utf8)
            #expect(
                !bytes.contains(0x1b) && !bytes.contains(0x07) && !bytes.contains(0x0d),
                "\(arguments): raw C0 on stdout: \(run.stdout.debugDescription)"
            )
            #expect(
                !run.stdout.unicodeScalars.contains { (0x80...0x9f).contains($0.value) },
                "\(arguments): raw C1 on stdout: \(run.stdout.debugDescription)"
            )
            #expect(run.stdout.contains("ok-source"), "\(arguments): a valid entry must still show\n\(run.summary)")
            #expect(
                !run.stdout.contains("xxxxxxxxxx"),
                "\(arguments): a 5000-byte source is not an entry\n\(run.summary)"
            )
        }
    }

    @Test("A lock holder's source with escape sequences is not printed raw in the refusal")
    func holderControlCharacters() throws {
        let sim = try Simulator(["--hold-ms", "1500"])
        let config = try TestConfig.udp(
            host: "127.0.0.1",
            port: sim.udpPort,
            extra: "timeout = 5.0\n[runtime]\ncooldown = 0"
        )
        let folders = try SharedFolders()
        let long = try GateRunner.start(["open", "--config", config.path], environment: folders.environment)
        #expect(waitUntil(.seconds(10)) { statusState(folders.runtime) == "waiting_for_relay_close" })
        // Rewritten in place, as a member could: the holder writes it again only at its end.
        let hostile = #"{"pid":4242,"source":"\u001b]0;pwned\u0007\u009b2J","since":"2026-01-01T00:00:00.000Z"}"#
        let fd = open(folders.runtime + "/lock", O_WRONLY | O_TRUNC | O_CLOEXEC)
        try #require(fd >= 0)
        _ = Array(hostile.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)

        let refused = try GateRunner.run(
            ["open", "--config", config.path],
            environment: folders.environment,
            timeout: .seconds(20)
        )
        #expect(refused.status == 75, "\(refused.summary)")
        #expect(refused.stderr.contains("pid 4242"), "\(refused.summary)")
        #expect(
            !Array(refused.stderr.utf8).contains(0x1b) && !Array(refused.stderr.utf8).contains(0x07),
            "raw C0 on stderr: \(refused.stderr.debugDescription)"
        )
        #expect(
            !refused.stderr.unicodeScalars.contains { (0x80...0x9f).contains($0.value) },
            "raw C1 on stderr: \(refused.stderr.debugDescription)"
        )
        _ = try long.finish(timeout: .seconds(20))
    }

    // MARK: size

    @Test("history.jsonl over 1 MiB: the next opening trims it and the newest openings stay readable")
    func historyOverOneMiB() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
        let folders = try SharedFolders()
        let history = folders.state + "/history.jsonl"
        let junk = String(repeating: String(repeating: "j", count: 99) + "\n", count: 20_000)  // 2 MB

        // Junk appended before an opening: the opening trims it.
        try junk.write(toFile: history, atomically: false, encoding: .utf8)
        let first = try GateRunner.run(
            ["open", "--config", config.path, "--source", "first"],
            environment: folders.environment
        )
        #expect(first.status == 0, "\(first.summary)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: history)[.size] as? Int)
        #expect(size <= 256 * 1024, "trimmed to the bound, not \(size) bytes")
        #expect(try DaemonFiles.history(environment: folders.environment).map { $0["source"] as? String } == ["first"])

        // Junk appended after the openings: they still show.
        let second = try GateRunner.run(
            ["open", "--config", config.path, "--source", "second"],
            environment: folders.environment
        )
        #expect(second.status == 0, "\(second.summary)")
        let handle = try #require(FileHandle(forWritingAtPath: history))
        handle.seekToEndOfFile()
        handle.write(Data(junk.utf8))
        handle.write(Data("no newline at the end".utf8))
        try handle.close()
        #expect(
            try DaemonFiles.history(environment: folders.environment).map { $0["source"] as? String } == [
                "first", "second",
            ]
        )

        // And an opening after a line without its newline is not glued to it.
        let third = try GateRunner.run(
            ["open", "--config", config.path, "--source", "third"],
            environment: folders.environment
        )
        #expect(third.status == 0, "\(third.summary)")
        #expect(
            try DaemonFiles.history(environment: folders.environment).map { $0["source"] as? String } == [
                "first", "second", "third",
            ]
        )
    }

    // MARK: the shared /run/gate

    @Test(
        "/run/gate that this account cannot use: exit 78 naming it, no private lock; $GATE_RUNTIME_DIR still overrides",
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
            "needs root, setpriv and unshare: /run is replaced by a tmpfs in a mount namespace of the test's own"
        )
    )
    func sharedRuntimeFolderNotUsable() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("gate-shared-\(UUID().uuidString)")
            .path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for folder in ["xdg", "state", "own-run"] {
            try FileManager.default.createDirectory(atPath: scratch + "/" + folder, withIntermediateDirectories: true)
            chmod(scratch + "/" + folder, 0o777)
        }
        chmod(scratch, 0o755)
        chmod(config.directory.path, 0o755)
        chmod(config.path, 0o644)
        let gate = try GateRunner.binary().path
        func asNobody(
            _ extra: [String],
            command: [String]? = nil
        ) throws -> (status: Int32, stdout: String, stderr: String) {
            // A private /run (tmpfs in a new mount namespace): the machine's /run is never touched.
            let script = """
                mount -t tmpfs -o mode=0755 gate-test /run || exit 99
                mkdir -m 0770 /run/gate || exit 99
                exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
                """
            let run = try MosquittoBroker.runTool(
                "/usr/bin/env",
                [
                    "-i", "HOME=/nonexistent", "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=\(scratch)/xdg",
                    "GATE_STATE_DIR=\(scratch)/state",
                ] + extra + ["/usr/bin/unshare", "-m", "/bin/sh", "-c", script, "sh", gate] + (command ?? ["open"]) + [
                    "--config", config.path,
                ],
                timeout: .seconds(30)
            )
            return (run.status, run.stdout, run.stderr)
        }

        let refused = try asNobody([])
        #expect(refused.status == 78, "exit \(refused.status)\n\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("/run/gate"), "the message must name /run/gate: \(refused.stderr)")
        #expect(refused.stderr.contains("group gate"), "the message must say why: \(refused.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: scratch + "/xdg/gate"),
            "no private runtime folder beside the service's"
        )
        #expect(try sim.activations().isEmpty)
        for command in [["status"], ["history"]] {
            let other = try asNobody([], command: command)
            #expect(
                other.status == 78 && other.stderr.contains("/run/gate"),
                "\(command): exit \(other.status)\n\(other.stderr)"
            )
        }
        let doctor = try DoctorOutcome(
            GateRun(status: 0, stdout: try asNobody([], command: ["doctor", "--json"]).stdout, stderr: "", wall: .zero)
        )
        #expect(doctor["runtime"].status == "fail", "\(doctor.findings)")
        #expect(doctor["runtime"].fix?.contains("usermod -aG gate nobody") == true, "\(doctor["runtime"])")

        let overridden = try asNobody(["GATE_RUNTIME_DIR=\(scratch)/own-run"])
        #expect(overridden.status == 0, "exit \(overridden.status)\n\(overridden.stdout)\(overridden.stderr)")
        #expect(FileManager.default.fileExists(atPath: scratch + "/own-run/lock"))
        #expect(try sim.activations().count == 1)
    }
}

/// A runtime and a state folder of their own (mode 2770 like the deploy files') and the
/// environment that points `gate` at them.
private struct SharedFolders {
    let scratch: String
    let runtime: String
    let state: String
    let environment: [String: String]

    init() throws {
        environment = GateRunner.isolatedEnvironment()
        runtime = environment["GATE_RUNTIME_DIR"]!
        state = environment["GATE_STATE_DIR"]!
        scratch = URL(fileURLWithPath: runtime).deletingLastPathComponent().path
        for folder in [runtime, state] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            chmod(folder, 0o2770)
        }
    }
}

/// The state in status.json; nil while it is missing or not a regular file (a FIFO would block the read).
private func statusState(_ runtime: String) -> String? {
    var info = stat()
    guard lstat(runtime + "/status.json", &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
    return DaemonFiles.status(runtimeDirectory: runtime)?["state"] as? String
}

private func mode(of path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}
