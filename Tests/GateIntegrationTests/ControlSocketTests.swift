import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let triggerTopic = "iot/house/gate/esp32/trigger"

/// An output with every number replaced by N: the durations differ between two openings.
private func shape(_ text: String) -> String {
    text.replacingOccurrences(of: "[0-9]+", with: "N", options: .regularExpression)
}

/// The `--json` object without its durations, which differ between two openings.
private func withoutDurations(_ object: [String: Any]) -> NSDictionary {
    var copy = object
    copy["duration_ms"] = nil
    copy["message"] = (object["message"] as? String).map(shape)
    copy["attempts"] = (object["attempts"] as? [[String: Any]])?.map { attempt -> [String: Any] in
        var trimmed = attempt
        trimmed["duration_ms"] = nil
        trimmed["reason"] = (attempt["reason"] as? String).map(shape)
        return trimmed
    }
    return copy as NSDictionary
}

/// Writes `text` to the Unix socket at `path` (python3, as root) and returns what came
/// back until the daemon closed the connection.
private func rawExchange(_ path: String, _ text: String) throws -> String {
    let script = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sys.argv[1])
        s.sendall(sys.argv[2].encode())
        out = b""
        while True:
            data = s.recv(65536)
            if not data:
                break
            out += data
        sys.stdout.write(out.decode())
        """
    let run = try MosquittoBroker.runTool("/usr/bin/python3", ["-c", script, path, text], timeout: .seconds(20))
    guard run.status == 0 else { throw GateRunner.Failure("the raw exchange failed: \(run.summary)") }
    return run.stdout
}

/// What a stand-in daemon written in python says first on each connection: a `hello`
/// that names its own pid and uid and `runtime`, as gate's daemon does.
private func pythonHello(runtime: String) -> String {
    """
    json.dumps({"reply": "hello", "program": "gate", "pid": os.getpid(), "uid": os.getuid(), \
    "config": "/etc/gate/gate.toml", "runtime": \(String(reflecting: runtime))}).encode() + b"\\n"
    """
}

/// Starts `command` (a python listener on the control socket that writes "listening"
/// to `logFile` once bound) and waits until it listens; the caller terminates it.
private func startListener(_ command: [String], logFile: String) throws -> MosquittoBroker.Child {
    let listener = try MosquittoBroker.Child(
        command[0],
        Array(command.dropFirst()),
        stdout: nil,
        stderr: nil,
        watchdog: true
    )
    let listening = waitUntil { (try? String(contentsOfFile: logFile, encoding: .utf8))?.contains("listening") == true }
    guard listening else {
        listener.terminate(grace: .seconds(1))
        throw GateRunner.Failure("the listener on the control socket did not start: \(command.joined(separator: " "))")
    }
    return listener
}

extension DaemonTests {
    /// `gate open` hands its opening to the daemon on `control.sock` (docs/CONTRACT.md#the-control-socket).
    @Suite("The control socket")
    struct ControlSocket {
        @Test(
            "gate open through the daemon: logged with the client's uid and source, one activation, the same output, --json and exit code as a direct opening; --direct skips the daemon"
        )
        func delegatedLikeDirect() throws {
            let sim = try Simulator(["--hold-ms", "200"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            #expect(daemon.log.contains("control socket listening"), "\(daemon.log)")
            var info = stat()
            #expect(
                lstat(environment["GATE_RUNTIME_DIR"]! + "/control.sock", &info) == 0,
                "the socket is there once the daemon is ready"
            )
            #expect(
                info.st_mode & S_IFMT == S_IFSOCK && info.st_mode & 0o777 == 0o660,
                "a socket, mode 0660 like the lock: \(String(info.st_mode, radix: 8))"
            )

            let delegated = try GateRunner.run(
                ["open", "--config", config.path, "--source", "desk", "--json"],
                environment: environment
            )
            #expect(delegated.status == 0, "\(delegated.summary)")
            let handed = daemon.logLines(containing: "opening handed over on the control socket")
            #expect(handed.count == 1, "\(daemon.log)")
            #expect(handed.first?.contains("opener_uid=\(getuid())") == true, "\(handed)")
            #expect(handed.first?.contains("source=desk") == true, "\(handed)")
            #expect(try sim.activations().count == 1, "exactly one activation")
            #expect(DaemonFiles.last(daemon.status())?["source"] as? String == "desk")

            let direct = try GateRunner.run(
                ["open", "--config", config.path, "--source", "desk", "--json", "--direct"],
                environment: environment
            )
            #expect(direct.status == 0, "\(direct.summary)")
            #expect(
                daemon.logLines(containing: "opening handed over").count == 1,
                "--direct must not touch the socket: \(daemon.log)"
            )
            #expect(try sim.activations().count == 2)
            #expect(
                withoutDurations(try delegated.json()) == withoutDurations(try direct.json()),
                "\(delegated.stdout)\n\(direct.stdout)"
            )

            // Lines (not a terminal): every state and the result, as a direct opening prints them.
            let delegatedLines = try GateRunner.run(["open", "--config", config.path], environment: environment)
            let directLines = try GateRunner.run(
                ["open", "--config", config.path, "--direct"],
                environment: environment
            )
            #expect(
                delegatedLines.status == 0 && directLines.status == 0,
                "\(delegatedLines.summary)\n\(directLines.summary)"
            )
            #expect(
                shape(delegatedLines.stdout) == shape(directLines.stdout),
                "\(delegatedLines.stdout)\n\(directLines.stdout)"
            )
            #expect(
                delegatedLines.stdout.contains("relay activated via udp: waiting for the relay to release"),
                "\(delegatedLines.stdout)"
            )
            #expect(daemon.logLines(containing: "opening handed over").count == 2, "\(daemon.log)")
            #expect(try sim.activations().count == 4)
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
            #expect(
                !FileManager.default.fileExists(atPath: environment["GATE_RUNTIME_DIR"]! + "/control.sock"),
                "the socket goes away with the daemon"
            )
        }

        @Test(
            "An opening asked while the daemon runs one gets 75, from the daemon and directly alike; the first completes, one activation"
        )
        func busyGets75() throws {
            let sim = try Simulator(["--hold-ms", "1500"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()

            let first = try GateRunner.start(["open", "--config", config.path, "--json"], environment: environment)
            #expect(waitUntil { (try? sim.activations().count) == 1 }, "\(daemon.log)")
            let second = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            let secondDirect = try GateRunner.run(
                ["open", "--config", config.path, "--json", "--direct"],
                environment: environment
            )
            #expect(second.status == 75, "\(second.summary)")
            #expect(secondDirect.status == 75, "\(secondDirect.summary)")
            #expect(try second.json()["error"] as? String == "operationInProgress")
            #expect(
                daemon.logLines(containing: "opening handed over").count == 2,
                "the second went to the daemon: \(daemon.log)"
            )
            let firstRun = try first.finish(timeout: .seconds(20))
            #expect(firstRun.status == 0, "\(firstRun.summary)")
            #expect(try sim.activations().count == 1)
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test("--via mqtt through the daemon uses its warm link: the broker sees no new client")
        func warmLink() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator([
                "--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port), "--hold-ms", "200",
            ])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
            let connectionsBefore = broker.logText.components(separatedBy: "New client connected").count

            let run = try GateRunner.run(
                ["open", "--config", config.path, "--via", "mqtt", "--json"],
                environment: environment
            )
            #expect(run.status == 0, "\(run.summary)")
            #expect(try run.json()["adapter"] as? String == "mqtt")
            #expect(try sim.activations().map(\.via) == ["mqtt"])
            #expect(daemon.logLines(containing: "opening handed over", "via=mqtt").count == 1, "\(daemon.log)")
            #expect(
                broker.logText.components(separatedBy: "New client connected").count == connectionsBefore,
                "\(broker.logText)"
            )

            // The same opening by itself connects afresh: what the broker's log counts.
            let direct = try GateRunner.run(
                ["open", "--config", config.path, "--via", "mqtt", "--json", "--direct"],
                environment: environment
            )
            #expect(direct.status == 0, "\(direct.summary)")
            #expect(
                broker.logText.components(separatedBy: "New client connected").count == connectionsBefore + 1,
                "\(broker.logText)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "Daemon SIGKILLed mid-opening: the CLI exits 124 naming the adapter the daemon last reported, and sends no trigger of its own, neither over UDP nor MQTT"
        )
        func daemonKilledMidOpening() throws {
            let broker = try MosquittoBroker(.plain)
            let sim = try Simulator([
                "--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port), "--hold-ms", "1500",
            ])
            let recorder = try MQTTRecorder(broker, topic: triggerTopic)
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, mqttPort: broker.port, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")

            let client = try GateRunner.start(["open", "--config", config.path, "--json"], environment: environment)
            #expect(waitUntil { (try? sim.activations().count) == 1 }, "\(daemon.log)")
            daemon.send(SIGKILL)
            let run = try client.finish(timeout: .seconds(20))
            #expect(run.status == 124, "\(run.summary)")
            let object = try run.json()
            #expect(object["error"] as? String == "operationTimeout")
            #expect((object["message"] as? String)?.contains("the relay may have cycled") == true, "\(run.stdout)")
            // The daemon had started its UDP attempt: the 124 names it, never null (the
            // state line that reports it may come just after the trigger, and the kill
            // before it: then the client names the adapter the plan tries first).
            #expect(object["adapter"] as? String == "udp", "\(run.stdout)")
            #expect(
                (object["message"] as? String)?.contains("via udp") == true
                    || (object["message"] as? String)?.contains("tries udp first") == true,
                "\(run.stdout)"
            )
            // Past the relay's hold: a second trigger would have been an activation or an
            // ignored trigger by now.
            #expect(waitUntil { sim.stderrText.contains("released #1") }, "\(sim.stderrText)")
            Thread.sleep(forTimeInterval: 1)
            #expect(try sim.activations().map(\.via) == ["udp"], "one activation only")
            #expect(
                !sim.stderrText.contains("ignored"),
                "no second trigger while the relay was held: \(sim.stderrText)"
            )
            #expect(recorder.received(topic: triggerTopic).isEmpty, "no MQTT trigger: \(recorder.received)")
        }

        @Test(
            "SIGTERM while a handed-over opening runs: the opening finishes, the client gets its result, the daemon exits 0"
        )
        func gracefulStopFinishesOpening() throws {
            let sim = try Simulator(["--hold-ms", "1500"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()

            let client = try GateRunner.start(["open", "--config", config.path, "--json"], environment: environment)
            #expect(waitUntil { (try? sim.activations().count) == 1 }, "\(daemon.log)")
            daemon.send(SIGTERM)
            let run = try client.finish(timeout: .seconds(20))
            #expect(run.status == 0, "\(run.summary)\n\(daemon.log)")
            #expect(daemon.waitForExit() == .exited(0), "\(daemon.log)")
            #expect(try sim.activations().count == 1)
            #expect(!FileManager.default.fileExists(atPath: environment["GATE_RUNTIME_DIR"]! + "/control.sock"))
        }

        @Test(
            "A daemon that takes the request and then closes without a word, or accepts and goes silent: 124, and the client sends no trigger",
            arguments: ["close", "silent"]
        )
        func lostBeforeResult(mode: String) throws {
            let sim = try Simulator(["--hold-ms", "100"])
            // A short UDP budget: the silent daemon's bound is udp.timeout + 5 s.
            let config = try TestConfig.udp(
                host: sim.udpHost,
                port: sim.udpPort,
                extra: "timeout = 0.5\n[runtime]\ncooldown = 0"
            )
            let environment = GateRunner.isolatedEnvironment()
            let runtime = environment["GATE_RUNTIME_DIR"]!
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            let logFile = runtime + "/listener.log"
            // As this test's own user (trusted), introducing itself as gate's daemon: reads
            // the request, then closes or says "accepted" and nothing more.
            let script = """
                import json, os, socket, sys, time
                path, log, mode = sys.argv[1], sys.argv[2], sys.argv[3]
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(path)
                s.listen(8)
                open(log, "a").write("listening\\n")
                c, _ = s.accept()
                c.sendall(\(pythonHello(runtime: runtime)))
                data = c.recv(65536)
                open(log, "a").write("request " + data.decode() + "\\n")
                if mode == "silent":
                    c.sendall(b'{"reply":"accepted"}\\n')
                    time.sleep(60)
                c.close()
                time.sleep(60)
                """
            let listener = try startListener(
                ["/usr/bin/python3", "-c", script, runtime + "/control.sock", logFile, mode],
                logFile: logFile
            )
            defer { listener.terminate(grace: .seconds(1)) }

            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(run.status == 124, "\(run.summary)")
            #expect(
                (try run.json()["message"] as? String)?.contains("the relay may have cycled") == true,
                "\(run.stdout)"
            )
            #expect(
                (try? String(contentsOfFile: logFile, encoding: .utf8))?.contains(#""request":"open""#) == true,
                "the request reached the listener"
            )
            #expect(try sim.activations().isEmpty, "the client never triggers an opening it handed over")
        }

        @Test(
            "A daemon that stops without reading the request: never accepted (still in its queue), or accepted and closed unread; the client opens by itself, once",
            arguments: ["queued", "unread"]
        )
        func stoppedWithOpeningQueued(mode: String) throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig.udp(host: sim.udpHost, port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
            let environment = GateRunner.isolatedEnvironment()
            let runtime = environment["GATE_RUNTIME_DIR"]!
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            let logFile = runtime + "/listener.log"
            // `queued`: a daemon stopping between the client's connect and its accept(2):
            // the listening socket is closed with the connection still in its queue, and
            // the kernel resets it; the client, which waits for the daemon's hello, has
            // sent nothing. `unread`: the daemon accepted and said hello, the request
            // came, and the daemon closed without reading it: the kernel resets that
            // connection too; the request was never read, so nothing can have started.
            let script = """
                import json, os, select, socket, sys, time
                path, log, mode = sys.argv[1], sys.argv[2], sys.argv[3]
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(path)
                s.listen(8)
                open(log, "a").write("listening\\n")
                select.select([s], [], [])
                if mode == "unread":
                    c, _ = s.accept()
                    c.sendall(\(pythonHello(runtime: runtime)))
                    time.sleep(0.5)
                    c.close()
                    open(log, "a").write("closed with the request unread\\n")
                else:
                    time.sleep(0.5)
                    s.close()
                    open(log, "a").write("closed with a connection queued\\n")
                time.sleep(60)
                """
            let listener = try startListener(
                ["/usr/bin/python3", "-c", script, runtime + "/control.sock", logFile, mode],
                logFile: logFile
            )
            defer { listener.terminate(grace: .seconds(1)) }

            let run = try GateRunner.run(
                ["open", "--config", config.path, "--json", "--log-level", "debug"],
                environment: environment
            )
            #expect(run.status == 0, "\(run.summary)")
            let heard = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            if mode == "unread" {
                #expect(heard.contains("closed with the request unread"), "\(heard)")
                #expect(
                    run.stderr.contains("opening handed to the daemon")
                        && run.stderr.contains("before reading the request"),
                    "the request was sent, then the connection reset: \(run.stderr)"
                )
            } else {
                #expect(heard.contains("closed with a connection queued"), "\(heard)")
                #expect(
                    !run.stderr.contains("opening handed to the daemon")
                        && run.stderr.contains("went away before the request"),
                    "nothing was sent before the daemon's hello: \(run.stderr)"
                )
            }
            #expect(try sim.activations().count == 1)
        }

        @Test("A stale socket left by a SIGKILLed daemon: gate open opens by itself, and the next daemon replaces it")
        func staleSocket() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let socket = environment["GATE_RUNTIME_DIR"]! + "/control.sock"
            let killed = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try killed.waitForReady()
            killed.send(SIGKILL)
            _ = killed.waitForExit()
            var info = stat()
            #expect(
                lstat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK,
                "the killed daemon leaves its socket"
            )

            let alone = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(alone.status == 0, "\(alone.summary)")
            #expect(try sim.activations().count == 1)

            let next = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try next.waitForReady()
            #expect(
                next.logLines(containing: "control socket listening", "replaced_stale=true").count == 1,
                "\(next.log)"
            )
            let delegated = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(delegated.status == 0, "\(delegated.summary)")
            #expect(next.logLines(containing: "opening handed over").count == 1, "\(next.log)")
            #expect(try sim.activations().count == 2)
            #expect(next.stop() == .exited(0), "\(next.log)")
        }

        @Test(
            "A symbolic link or a file at control.sock: the daemon names it and runs without a socket until it is gone, never following it; gate open opens directly"
        )
        func notASocket() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let runtime = environment["GATE_RUNTIME_DIR"]!
            let socket = runtime + "/control.sock"
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            let victim = runtime + "/victim"
            try "untouched\n".write(toFile: victim, atomically: false, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: socket, withDestinationPath: victim)

            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            // Tried again with backoff (the link is never followed nor removed): DaemonTests.FailedParts.
            #expect(
                daemon.waitForLog("cannot listen on \(socket): it is a symbolic link, not a socket"),
                "\(daemon.log)"
            )
            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(run.status == 0, "\(run.summary)")
            #expect(run.stderr.contains("\(socket) is a symbolic link, not a socket"), "\(run.stderr)")
            #expect(daemon.logLines(containing: "opening handed over").isEmpty)
            #expect(try sim.activations().count == 1)
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "untouched\n")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
            var info = stat()
            #expect(lstat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK, "the link is left as it was")
        }

        @Test(
            "Garbage and an oversized request get an error reply naming the problem; the daemon keeps running; another configuration is declined and opened directly"
        )
        func badRequests() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let other = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let socket = environment["GATE_RUNTIME_DIR"]! + "/control.sock"
            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()

            let garbage = try rawExchange(socket, "this is not json\n")
            #expect(garbage.contains("\"reply\":\"error\"") && garbage.contains("not one JSON object"), "\(garbage)")
            let oversized = try rawExchange(socket, String(repeating: "x", count: 5000) + "\n")
            #expect(
                oversized.contains("\"reply\":\"error\"") && oversized.contains("longer than 4096 bytes"),
                "\(oversized)"
            )
            let unknown = try rawExchange(socket, "{\"request\":\"reboot\"}\n")
            #expect(unknown.contains("unknown request"), "\(unknown)")
            #expect(daemon.isRunning, "\(daemon.log)")
            #expect(try sim.activations().isEmpty)

            let declined = try GateRunner.run(
                ["open", "--config", other.path, "--json", "-v"],
                environment: environment
            )
            #expect(declined.status == 0, "\(declined.summary)")
            #expect(declined.stderr.contains("the daemon declined the opening"), "\(declined.stderr)")
            #expect(
                daemon.logLines(containing: "opening declined: the client uses another configuration").count == 1,
                "\(daemon.log)"
            )
            #expect(daemon.logLines(containing: "opening handed over").isEmpty)

            let good = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(good.status == 0, "\(good.summary)")
            #expect(daemon.logLines(containing: "opening handed over").count == 1, "\(daemon.log)")
            #expect(try sim.activations().count == 2)
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }

        @Test(
            "A listener of another uid at control.sock is not trusted: gate open opens directly and writes nothing to it; a daemon leaves it alone",
            .enabled(
                if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                    && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                "needs root, setpriv and python3: the listener runs as uid 65534"
            )
        )
        func hostileListener() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            let runtime = environment["GATE_RUNTIME_DIR"]!
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
            chmod(environment["HOME"]!, 0o755)
            // A folder that group members share: here anyone may create in it.
            chmod(runtime, 0o1777)
            let socket = runtime + "/control.sock"
            let logFile = runtime + "/hostile.log"
            let script = """
                import os, socket, sys
                path, log = sys.argv[1], sys.argv[2]
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind(path)
                os.chmod(path, 0o666)
                s.listen(8)
                def note(text):
                    with open(log, "a") as f:
                        f.write(text + "\\n")
                note("listening")
                while True:
                    c, _ = s.accept()
                    c.settimeout(3)
                    try:
                        data = c.recv(65536)
                    except OSError:
                        data = b""
                    note("received %d bytes" % len(data))
                    c.close()
                """
            let hostile = try startListener(
                [
                    "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                    script, socket, logFile,
                ],
                logFile: logFile
            )
            defer { hostile.terminate(grace: .seconds(2)) }

            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            #expect(run.status == 0, "\(run.summary)")
            #expect(
                run.stderr.contains("not handing the opening to the process on \(socket)")
                    && run.stderr.contains("uid 65534"),
                "\(run.stderr)"
            )
            #expect(try sim.activations().count == 1)
            #expect(waitUntil { (try? String(contentsOfFile: logFile, encoding: .utf8))?.contains("received") == true })
            let heard = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            #expect(
                heard.contains("received 0 bytes")
                    && heard.range(of: "received [1-9]", options: .regularExpression) == nil,
                "no request for the hostile listener: \(heard)"
            )

            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            #expect(
                daemon.logLines(containing: "another daemon answers on the control socket", "other_uid=65534").count
                    == 1,
                "\(daemon.log)"
            )
            let doctor = try GateRunner.run(["doctor", "--config", config.path, "--json"], environment: environment)
            let findings = try JSONSerialization.jsonObject(with: Data(doctor.stdout.utf8)) as? [[String: Any]] ?? []
            let verdict = findings.first { $0["check"] as? String == "daemon" }
            #expect(verdict?["status"] as? String == "fail", "\(doctor.summary)")
            #expect((verdict?["detail"] as? String)?.contains("uid 65534") == true, "\(String(describing: verdict))")
            let heardAfter = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            #expect(
                heardAfter.range(of: "received [1-9]", options: .regularExpression) == nil,
                "the doctor asks an untrusted listener nothing: \(heardAfter)"
            )
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
            var info = stat()
            #expect(
                lstat(socket, &info) == 0 && info.st_uid == 65534,
                "the daemon leaves the other listener's socket in place"
            )
        }

        @Test("gate doctor names the daemon that serves the runtime folder, and says when none does")
        func doctorNamesDaemon() throws {
            let sim = try Simulator(["--hold-ms", "100"])
            let config = try TestConfig(daemonConfigText(udpPort: sim.udpPort, cooldown: 0))
            let environment = GateRunner.isolatedEnvironment()
            func daemonFinding() throws -> [String: Any]? {
                let doctor = try GateRunner.run(
                    ["doctor", "--config", config.path, "--json"],
                    environment: environment
                )
                let findings =
                    try JSONSerialization.jsonObject(with: Data(doctor.stdout.utf8)) as? [[String: Any]] ?? []
                return findings.first { $0["check"] as? String == "daemon" }
            }
            let none = try daemonFinding()
            #expect(none?["status"] as? String == "ok")
            #expect((none?["detail"] as? String)?.contains("no daemon answers") == true, "\(String(describing: none))")

            let daemon = try DaemonProcess(config: config.path, environment: environment, buttonFIFO: false)
            try daemon.waitForReady()
            let served = try daemonFinding()
            let detail = served?["detail"] as? String ?? ""
            #expect(served?["status"] as? String == "ok", "\(String(describing: served))")
            #expect(detail.contains("this user's own daemon (pid \(daemon.pid))"), "\(detail)")
            #expect(detail.contains(config.path), "the daemon's configuration is named: \(detail)")
            #expect(daemon.stop() == .exited(0), "\(daemon.log)")
        }
    }
}
