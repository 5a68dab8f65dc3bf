import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A client of the control socket written in python (as root), for what `gate open`
/// never does on its own: it connects, reads the daemon's first line, then SIGSTOPs the
/// daemon, sends an opening stamped with CLOCK_MONOTONIC now, and either hangs up
/// (`hangup`) or waits 2.5 s, SIGCONTs the daemon and prints every reply (`stalled`).
private let stallingClient = """
    import json, os, signal, socket, sys, time
    path, pid, config, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)  # a reply, not a timing: a loaded machine may take seconds
    s.connect(path)
    buffer = b""
    def line():
        global buffer
        while b"\\n" not in buffer:
            try:
                data = s.recv(65536)
            except OSError:
                return None
            if not data:
                return None
            buffer += data
        first, _, buffer = buffer.partition(b"\\n")
        return first.decode()
    print("banner", line(), flush=True)
    os.kill(pid, signal.SIGSTOP)
    # The stop reaches the daemon's threads one after another: one of them, woken by the
    # signal, stops the rest. On a loaded machine the listener read a request sent at once.
    def stopped():
        tasks = os.listdir(f"/proc/{pid}/task")
        return all(open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()[0] == "T" for t in tasks)
    deadline = time.monotonic() + 5
    while not stopped() and time.monotonic() < deadline:
        time.sleep(0.001)
    request = {"request": "open", "source": "cli", "via": "auto", "force": False, "config": config,
               "sent_monotonic_ns": time.clock_gettime_ns(time.CLOCK_MONOTONIC)}
    s.sendall((json.dumps(request) + "\\n").encode())
    if mode == "hangup":
        s.close()
        os.kill(pid, signal.SIGCONT)
        sys.exit(0)
    time.sleep(2.5)
    os.kill(pid, signal.SIGCONT)
    while True:
        got = line()
        if got is None:
            break
        print("reply", got, flush=True)
    """

/// Leaves the daemon no descriptor to accept with (its RLIMIT_NOFILE set to its lowest
/// free descriptor), connects, and prints the CPU the daemon used in the next 2 s; then
/// gives the descriptors back and prints the line the daemon says first (`hello`).
private let descriptorStarver = """
    import json, os, resource, socket, sys, time
    path, pid = sys.argv[1], int(sys.argv[2])
    used = {int(name) for name in os.listdir(f"/proc/{pid}/fd")}
    lowest = next(n for n in range(len(used) + 1) if n not in used)
    saved = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (lowest, saved[1]))
    def cpu():
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect(path)
    before = cpu()
    time.sleep(2)
    ticks = cpu() - before
    resource.prlimit(pid, resource.RLIMIT_NOFILE, saved)
    buffer = b""
    while b"\\n" not in buffer:
        data = s.recv(65536)
        if not data:
            break
        buffer += data
    print(json.dumps({"ticks": ticks, "hz": os.sysconf("SC_CLK_TCK"), "first": buffer.decode(errors="replace")}))
    """

/// A root-owned listening socket that is not gate's daemon (journald's stdout socket,
/// say): mode 0666, it accepts, then says nothing (`silent`), writes junk (`junk`), or
/// a gate banner for the right runtime folder with a pid that is not its own (`forged`);
/// it notes each connection and how many bytes the client sent it.
private let fakeDaemon = """
    import json, os, socket, sys
    path, log, mode, runtime = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o666)
    s.listen(64)
    def note(text):
        with open(log, "a") as f:
            f.write(text + "\\n")
    note("listening")
    while True:
        c, _ = s.accept()
        note("accepted")
        try:
            if mode == "junk":
                c.sendall(b"\\x1b[2Jthis is not gate\\n")
            elif mode == "forged":
                banner = {"reply": "hello", "program": "gate", "pid": 1, "uid": 0, "runtime": runtime,
                          "config": "/etc/gate/gate.toml"}
                c.sendall((json.dumps(banner) + "\\n").encode())
            c.settimeout(3)
            data = c.recv(65536)
        except OSError:
            data = b""
        note("received %d bytes" % len(data))
        c.close()
    """

/// A group member's swapper: exchanges two names with renameat2(RENAME_EXCHANGE) until
/// `stop` exists, ends with the names as they were, and prints how many exchanges it made.
private let swapper = """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    a, b, stop = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3]
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    def exchange():
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            # ENOENT: the daemon saw its socket swapped away and is making it anew; go on.
            if ctypes.get_errno() == 2:
                return False
            sys.stderr.write("renameat2: errno %d\\n" % ctypes.get_errno())
            sys.exit(1)
        return True
    count = 0
    while not os.path.exists(stop):
        if exchange():
            count += 1
    if count % 2:
        exchange()
    print(count, flush=True)
    """

/// Starts the fake daemon at `path` and waits until it listens.
private func startFake(path: String, log: String, mode: String, runtime: String) throws -> MosquittoBroker.Child {
    let fake = try MosquittoBroker.Child(
        "/usr/bin/python3",
        ["-c", fakeDaemon, path, log, mode, runtime],
        stdout: nil,
        stderr: nil,
        watchdog: true
    )
    guard
        waitUntil(.seconds(15), { (try? String(contentsOfFile: log, encoding: .utf8))?.contains("listening") == true })
    else {
        fake.terminate(grace: .zero)
        throw GateRunner.Failure("the fake daemon did not start")
    }
    return fake
}

private func text(_ path: String) -> String {
    (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
}

/// Whether the fake was sent any byte at all.
private func fakeHeardSomething(_ log: String) -> Bool {
    text(log).range(of: "received [1-9]", options: .regularExpression) != nil
}

/// Whether nobody holds the opening lock (the runtime folder and `lock`), as an opener
/// would find it: probed with a non-blocking exclusive flock, dropped at once.
private func lockIsFree(runtime: String) -> Bool {
    for path in [runtime, runtime + "/lock"] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 { continue }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        flock(fd, LOCK_UN)
    }
    return true
}

/// SIGSTOPs the daemon at a moment it holds no part of the opening lock (its status
/// keeper takes it now and then): a stopped daemon that held it would refuse every
/// opener, which is another story than this test's.
private func stopOutsideTheLock(_ daemon: DaemonProcess, runtime: String) -> Bool {
    for _ in 0..<50 {
        daemon.send(SIGSTOP)
        guard waitUntil(.seconds(15), { isStopped(daemon.pid) }) else { return false }
        if lockIsFree(runtime: runtime) { return true }
        daemon.send(SIGCONT)
        Thread.sleep(forTimeInterval: 0.05)
    }
    return false
}

extension DaemonTests {
    /// The control socket's rules (docs/CONTRACT.md#the-control-socket): requests expire,
    /// a hung-up client gets no trigger, the client trusts only gate's daemon, history
    /// names who asked, a lost daemon's 124 names its adapter.
    @Suite("The control socket's rules")
    struct ControlSocketRules {
        @Test(
            "A stopped daemon: gate open sends it nothing, opens by itself once, and the daemon, continued, starts no opening for it"
        )
        func stoppedDaemonNoGhost() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            // A short UDP budget: the client's bound on a silent daemon is udp.timeout + 5 s.
            let config = try TestConfig.udp(
                host: sim.udpHost,
                port: sim.udpPort,
                extra: "timeout = 0.5\n[runtime]\ncooldown = 0"
            )
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()

            #expect(stopOutsideTheLock(daemon, runtime: environment["GATE_RUNTIME_DIR"]!), "\(daemon.log)")
            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            let atExit = try sim.activations().count
            daemon.send(SIGCONT)
            #expect(run.status == 0, "the client opened by itself: \(run.summary)")
            #expect(atExit == 1, "its one activation came while it waited")

            // The continued daemon has the first connection in its queue; a second
            // opening, handed over, comes after it in the same queue.
            let second = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(second.status == 0, "\(second.summary)\n\(daemon.log)")
            #expect(daemon.logLines(containing: "opening handed over").count == 1, "\(daemon.log)")
            #expect(try sim.activations().count == atExit + 1, "no activation for the client that was gone")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "A request that waited more than 2 s (the daemon stopped after its banner) is declined as expired, while its client still waits: nothing started"
        )
        func expiredRequestDeclined() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let socket = environment["GATE_RUNTIME_DIR"]! + "/control.sock"
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()

            let client = try MosquittoBroker.runTool(
                "/usr/bin/python3",
                ["-c", stallingClient, socket, String(daemon.pid), config.path, "stalled"],
                timeout: .seconds(30)
            )
            #expect(client.status == 0, "\(client.summary)")
            #expect(client.stdout.contains(#"banner {"reply":"hello""#), "\(client.stdout)")
            #expect(
                client.stdout.contains(#"reply {"reply":"declined""#) && client.stdout.contains("expired"),
                "\(client.stdout)\n\(daemon.log)"
            )
            #expect(!client.stdout.contains(#""reply":"accepted""#), "\(client.stdout)")
            #expect(daemon.logLines(containing: "opening declined", "expired").count == 1, "\(daemon.log)")
            #expect(try sim.activations().isEmpty, "nothing was started for the expired request")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "Out of descriptors, the listener leaves its queue alone instead of spinning; it greets the client once it can"
        )
        func outOfDescriptorsDoesNotSpin() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let socket = environment["GATE_RUNTIME_DIR"]! + "/control.sock"
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            daemon.waitForSettling()

            let run = try MosquittoBroker.runTool(
                "/usr/bin/python3",
                ["-c", descriptorStarver, socket, String(daemon.pid)],
                timeout: .seconds(30)
            )
            #expect(run.status == 0, "\(run.summary)")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
                "\(run.summary)"
            )
            let ticks = try #require(report["ticks"] as? Int)
            let hz = try #require(report["hz"] as? Int)
            // A busy loop takes a whole core: 2 s of CPU in these 2 s. Waking ten times a
            // second to try again takes a few milliseconds.
            #expect(Double(ticks) / Double(hz) < 0.5, "the daemon used \(ticks) ticks of CPU in 2 s\n\(daemon.log)")
            #expect((report["first"] as? String)?.contains(#""reply":"hello""#) == true, "\(report)")
            #expect(daemon.isRunning, "\(daemon.log)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("A client that hangs up before its request is read gets no opening: no trigger, nothing recorded")
        func hungUpBeforeBegin() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let socket = environment["GATE_RUNTIME_DIR"]! + "/control.sock"
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()

            let client = try MosquittoBroker.runTool(
                "/usr/bin/python3",
                ["-c", stallingClient, socket, String(daemon.pid), config.path, "hangup"],
                timeout: .seconds(30)
            )
            #expect(client.status == 0, "\(client.summary)")
            #expect(daemon.waitForLog("opening declined", "hung up"), "\(daemon.log)")
            #expect(daemon.logLines(containing: "opening handed over").isEmpty, "\(daemon.log)")
            #expect(try sim.activations().isEmpty)
            #expect(try daemon.history().isEmpty, "no opening began")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "A client killed after its opening began but before the trigger: the permit sends nothing (the daemon held before its lock)"
        )
        func hungUpBeforeTrigger() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let shim = try ArmedOpenShim(name: "lock")
            var environment = GateRunner.isolatedEnvironment()
            let clientEnvironment = environment
            environment["LD_PRELOAD"] = shim.path
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            // The status keeper's first status file, written under the lock, is done.
            #expect(waitUntil { daemon.status() != nil }, "\(daemon.log)")

            shim.arm()
            let client = try GateRunner.start(
                ["open", "--config", config.path, "--json"],
                environment: clientEnvironment
            )
            #expect(waitUntil { shim.isHeld }, "the daemon's opening reached its lock: \(daemon.log)")
            client.send(SIGKILL)
            _ = try? client.finish(timeout: .seconds(10))
            shim.release()
            #expect(daemon.waitForLog("hung up before the trigger"), "\(daemon.log)")
            #expect(daemon.logLines(containing: "opening handed over").count == 1, "\(daemon.log)")
            Thread.sleep(forTimeInterval: 0.5)
            #expect(try sim.activations().isEmpty, "no trigger for a client that hung up")
            let history = try daemon.history()
            #expect(history.count == 1 && history.first?["outcome"] as? String == "error", "\(history)")

            let next = try GateRunner.run(["open", "--config", config.path, "--json"], environment: clientEnvironment)
            #expect(next.status == 0, "\(next.summary)\n\(daemon.log)")
            #expect(try sim.activations().count == 1)
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "A member swapping control.sock with a link to a root-owned socket (renameat2 RENAME_EXCHANGE in a loop): no opening is ever handed to the fake",
            .enabled(
                if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                "needs root (the fake is root's) and python3"
            )
        )
        func swappedSocketNeverTrusted() throws {
            let sim = try Simulator(["--hold-ms", "20"])
            // A short UDP budget: the client's bound on a silent daemon is udp.timeout + 5 s.
            let config = try TestConfig.udp(
                host: sim.udpHost,
                port: sim.udpPort,
                extra: "timeout = 0.5\n[runtime]\ncooldown = 0"
            )
            let environment = GateRunner.isolatedEnvironment()
            let runtime = environment["GATE_RUNTIME_DIR"]!
            let home = environment["HOME"]!
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            let fakeLog = home + "/fake.log"
            let fake = try startFake(path: home + "/fake.sock", log: fakeLog, mode: "junk", runtime: runtime)
            defer { fake.terminate(grace: .zero) }
            let link = runtime + "/evil"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: home + "/fake.sock")
            let stop = home + "/stop-swapping"
            let swapperOut = URL(fileURLWithPath: home + "/swapper.out")
            let swapping = try MosquittoBroker.Child(
                "/usr/bin/python3",
                ["-c", swapper, runtime + "/control.sock", link, stop],
                stdout: swapperOut,
                stderr: swapperOut,
                watchdog: true
            )

            let runs = 30
            var statuses: [Int32] = []
            var handedOver = 0
            for _ in 0..<runs {
                let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
                statuses.append(run.status)
                #expect(run.status == 0, "\(run.summary)")
            }
            _ = FileManager.default.createFile(atPath: stop, contents: nil)
            #expect(swapping.waitForExit(within: .seconds(10)))
            handedOver = daemon.logLines(containing: "opening handed over").count
            let exchanges = Int(text(swapperOut.path).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            let reachedFake = text(fakeLog).components(separatedBy: "accepted").count - 1
            #expect(exchanges > runs, "the swapper ran throughout: \(text(swapperOut.path))")
            #expect(!fakeHeardSomething(fakeLog), "an opening went to the fake: \(text(fakeLog))")
            let activations = try sim.activations().count
            #expect(
                statuses.allSatisfy { $0 == 0 } && activations == runs,
                "every run opened once (\(handedOver) through the daemon, the fake reached \(reachedFake) times): \(statuses)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "A hard link to a root-owned socket at control.sock: connected, it never proves itself gate's daemon; the client sends it nothing and opens by itself",
            .enabled(
                if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                "needs root (the fake is root's) and python3"
            ),
            arguments: ["silent", "junk", "forged"]
        )
        func impostorNeverTrusted(mode: String) throws {
            let sim = try Simulator(["--hold-ms", "20"])
            // A short UDP budget: the client's bound on a silent daemon is udp.timeout + 5 s.
            let config = try TestConfig.udp(
                host: sim.udpHost,
                port: sim.udpPort,
                extra: "timeout = 0.5\n[runtime]\ncooldown = 0"
            )
            let environment = GateRunner.isolatedEnvironment()
            let runtime = environment["GATE_RUNTIME_DIR"]!
            let home = environment["HOME"]!
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            let fakeLog = home + "/fake.log"
            let fake = try startFake(path: home + "/fake.sock", log: fakeLog, mode: mode, runtime: runtime)
            defer { fake.terminate(grace: .zero) }
            #expect(link(home + "/fake.sock", runtime + "/control.sock") == 0, "errno \(errno)")

            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(run.status == 0, "\(run.summary)")
            #expect(try sim.activations().count == 1)
            #expect(run.stderr.contains("not handing the opening to the process on"), "\(run.stderr)")
            #expect(waitUntil { text(fakeLog).contains("received") }, "the client connected: \(text(fakeLog))")
            #expect(!fakeHeardSomething(fakeLog), "the fake was sent the request: \(text(fakeLog))")
        }

        @Test(
            "History names who asked: a delegated opening by uid 65534 is recorded with uid 65534; a reserved source (button) is declined and opened by the client itself, under its own uid",
            .enabled(
                if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
                "needs root and setpriv: the client runs as uid 65534"
            )
        )
        func historyNamesRequester() throws {
            let sim = try Simulator(["--hold-ms", "20"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let home = environment["HOME"]!
            let runtime = environment["GATE_RUNTIME_DIR"]!
            let state = environment["GATE_STATE_DIR"]!
            // The deploy files' shared folders: group 65534 (nogroup) stands for `gate`.
            for folder in [runtime, state] {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                #expect(chown(folder, 0, 65534) == 0 && chmod(folder, 0o2770) == 0)
            }
            chmod(home, 0o755)
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()

            func openAsNobody(_ source: String) throws -> MosquittoBroker.ToolRun {
                try MosquittoBroker.runTool(
                    "/usr/bin/setpriv",
                    [
                        "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env", "-i", "HOME=\(home)",
                        "GATE_RUNTIME_DIR=\(runtime)", "GATE_STATE_DIR=\(state)", "PATH=/usr/bin:/bin",
                        try GateRunner.binary().path, "open", "--config", config.path, "--source", source, "--json",
                    ],
                    timeout: .seconds(30)
                )
            }
            let delegated = try openAsNobody("desk")
            #expect(delegated.status == 0, "\(delegated.summary)")
            #expect(
                daemon.logLines(containing: "opening handed over", "opener_uid=65534").count == 1,
                "\(daemon.log)"
            )
            let pressed = try openAsNobody("button")
            #expect(pressed.status == 0, "\(pressed.summary)")
            #expect(daemon.logLines(containing: "opening declined", "reserved").count == 1, "\(daemon.log)")
            #expect(daemon.logLines(containing: "opening handed over").count == 1, "\(daemon.log)")
            #expect(try sim.activations().count == 2)
            let history = try daemon.history()
            let entries = history.map { "\($0["source"] as? String ?? "?")/\($0["uid"] as? Int ?? -1)" }
            #expect(entries == ["desk/65534", "button/65534"], "\(history)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }
    }
}
