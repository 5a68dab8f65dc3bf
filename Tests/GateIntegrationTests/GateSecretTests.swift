import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A gate configuration for a simulator behind a broker, with a username (so a password is needed).
private func secretConfig(
    udpPort: UInt16?,
    broker: MosquittoBroker?,
    username: String = "gate",
    extra: String = ""
) throws -> TestConfig {
    var text = ""
    if let udpPort {
        text += "[udp]\nhost = \"127.0.0.1\"\nport = \(udpPort)\n"
    }
    // Without a broker: a port where nothing listens; the password is looked up before connecting.
    text += "[mqtt]\nhost = \"127.0.0.1\"\nport = \(broker?.port ?? 1)\nusername = \"\(username)\"\n"
    if let caFile = broker?.caFile {
        text += "tls = true\nca_file = \"\(caFile)\"\n"
    }
    text += extra
    return try TestConfig(text)
}

/// The simulator's MQTT options for a broker, logging in as `esp32`.
private func simulatorMQTT(_ broker: MosquittoBroker) -> [String] {
    var arguments = ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port), "--mqtt-username", "esp32"]
    if let caFile = broker.caFile { arguments += ["--mqtt-tls-ca", caFile] }
    return arguments
}

private let simulatorPassword = "esp32-pw-Vb8"

/// A `$CREDENTIALS_DIRECTORY` holding `mqtt-password`, as systemd makes it.
private func credentialsDirectory(password: String) throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-credentials-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try (password + "\n").write(to: folder.appendingPathComponent("mqtt-password"), atomically: true, encoding: .utf8)
    return folder.path
}

private func gatePath() throws -> String { try GateRunner.binary().path }

/// The package's root, from this file's place in it.
private let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The MQTT password in a real Secret Service (gnome-keyring on a private session bus), used
/// by a real `gate` against a real TLS + password broker (docs/CONTRACT.md#secrets, issue 5).
@Suite("gate secret and the Secret Service", .serialized)
struct GateSecretTests {
    /// The MQTT attempt's reason when no source has the password: one sentence and its fix.
    static let noPassword =
        "no MQTT password found: store one with `gate secret set mqtt-password`, or give the service the "
        + "systemd credential `mqtt-password` (LoadCredentialEncrypted=mqtt-password); -v shows where gate looked"

    /// The attempt's duration as printed (`mqtt (3 ms): …`), to compare the rest exactly.
    static func milliseconds(_ text: String) -> String {
        guard let open = text.range(of: "mqtt ("), let end = text[open.upperBound...].range(of: " ms)") else {
            return "?"
        }
        return String(text[open.upperBound..<end.lowerBound])
    }

    @Test("gate secret set from stdin; secret-tool finds the same entry; a TLS + password opening uses it")
    func setLookupOpen() throws {
        let password = "gate-pw-Ks4 with spaces"
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": password, "esp32": simulatorPassword]))
        let sim = try Simulator(simulatorMQTT(broker), environment: ["ESP32_SIM_MQTT_PASSWORD": simulatorPassword])
        let config = try secretConfig(udpPort: sim.udpPort, broker: broker)
        let session = try SecretSession()

        let set = try session.run(try gatePath(), ["secret", "set", "mqtt-password"], stdin: password + "\n")
        #expect(set.status == 0, "\(set.summary)\n\(session.log)")
        #expect(set.stdout.contains("org.gate.Credentials"))

        // Interoperability: any libsecret client sees the entry under the documented attributes.
        let lookup = try session.secretToolLookup()
        #expect(lookup.status == 0, "\(lookup.summary)")
        #expect(lookup.stdout == password, "one trailing newline trimmed, nothing else")

        let status = try session.run(try gatePath(), ["secret", "status", "mqtt-password"])
        #expect(status.status == 0, "\(status.summary)")
        #expect(status.stdout.contains("mqtt-password: from the Secret Service"), "\(status.stdout)")
        #expect(!status.stdout.contains(password) && !status.stderr.contains(password))

        let environment = session.environment()
        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: environment
        )
        #expect(run.status == 0, "\(run.summary)")
        #expect(try run.json()["adapter"] as? String == "mqtt")
        #expect(try sim.activations().map(\.via) == ["mqtt"])
    }

    @Test("$CREDENTIALS_DIRECTORY wins over the Secret Service")
    func credentialsDirectoryWins() throws {
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": "right-pw-Hn3", "esp32": simulatorPassword]))
        let sim = try Simulator(simulatorMQTT(broker), environment: ["ESP32_SIM_MQTT_PASSWORD": simulatorPassword])
        let config = try secretConfig(udpPort: nil, broker: broker)
        let session = try SecretSession()
        let set = try session.run(try gatePath(), ["secret", "set", "mqtt-password"], stdin: "wrong-pw-Jd6")
        #expect(set.status == 0, "\(set.summary)")

        var environment = session.environment()
        environment["CREDENTIALS_DIRECTORY"] = try credentialsDirectory(password: "right-pw-Hn3")
        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: environment
        )
        #expect(run.status == 0, "\(run.summary)")
        #expect(try sim.activations().count == 1)

        let status = try session.run(try gatePath(), ["secret", "status", "mqtt-password"], environment: environment)
        #expect(status.status == 0, "\(status.summary)")
        #expect(status.stdout.contains("mqtt-password: from systemd credentials"), "\(status.stdout)")

        // And the other way round, as a control: the keyring's wrong one alone is refused by the broker.
        let keyringOnly = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: session.environment()
        )
        #expect(keyringOnly.status == 69, "\(keyringOnly.summary)")
    }

    @Test("delete, then --via mqtt: 78 with how to store one; delete again is not an error")
    func deleteThenOpen() throws {
        let session = try SecretSession()
        let config = try secretConfig(udpPort: nil, broker: nil)
        #expect(
            try session.run(try gatePath(), ["secret", "set", "mqtt-password"], stdin: "to-be-deleted-Wq1\n").status
                == 0
        )

        let delete = try session.run(try gatePath(), ["secret", "delete", "mqtt-password"])
        #expect(delete.status == 0, "\(delete.summary)")
        #expect(delete.stdout.contains("Deleted"))
        let lookup = try session.secretToolLookup()
        #expect(lookup.status != 0 && lookup.stdout.isEmpty, "the entry is still there: \(lookup.summary)")

        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--config", config.path],
            environment: session.environment()
        )
        #expect(run.status == 78, "\(run.summary)")
        #expect(run.stderr.contains(Self.noPassword), "\(run.stderr)")
        #expect(!run.stderr.contains("the Secret Service: no entry"), "where gate looked is for -v: \(run.stderr)")
        let verbose = try GateRunner.run(
            ["open", "-v", "--via", "mqtt", "--config", config.path],
            environment: session.environment()
        )
        #expect(verbose.stderr.contains("the Secret Service: no entry"), "\(verbose.stderr)")

        let json = try GateRunner.run(
            ["open", "--via", "mqtt", "--json", "--config", config.path],
            environment: session.environment()
        )
        #expect(json.status == 78)
        #expect(try json.json()["error"] as? String == "configurationMissing")

        let again = try session.run(try gatePath(), ["secret", "delete", "mqtt-password"])
        #expect(again.status == 0, "\(again.summary)")
        #expect(again.stdout.contains("nothing to delete"))

        let status = try session.run(try gatePath(), ["secret", "status", "mqtt-password"])
        #expect(status.status == 78, "\(status.summary)")
        #expect(status.stdout.contains("mqtt-password: nowhere"))
    }

    @Test("A locked collection: 78 saying so (not \"store one\"), from open, set, status and delete")
    func lockedCollection() throws {
        let session = try SecretSession()
        let config = try secretConfig(udpPort: nil, broker: nil)
        #expect(
            try session.run(try gatePath(), ["secret", "set", "mqtt-password"], stdin: "locked-away-Tr8\n").status == 0
        )
        try session.lockDefaultCollection()

        let run = try GateRunner.run(
            ["open", "--via", "mqtt", "--config", config.path],
            environment: session.environment()
        )
        #expect(run.status == 78, "\(run.summary)")
        #expect(run.stderr.contains("locked") && run.stderr.contains("unlock the keyring"), "\(run.stderr)")
        #expect(
            !run.stderr.contains("gate secret set"),
            "advice to store a password that is already there: \(run.stderr)"
        )

        for command in ["set", "status", "delete"] {
            let result = try session.run(try gatePath(), ["secret", command, "mqtt-password"], stdin: "other-Qa1\n")
            #expect(result.status == 78, "\(command): \(result.summary)")
            #expect((result.stdout + result.stderr).contains("locked"), "\(command): \(result.summary)")
        }
    }

    @Test("No session bus at all: 78 with the headless advice, from open, set and status")
    func noSessionBus() throws {
        let config = try secretConfig(udpPort: nil, broker: nil)
        var environment = GateRunner.isolatedEnvironment()
        for key in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY"] {
            environment[key] = nil
        }

        let short = try GateRunner.run(["open", "--via", "mqtt", "--config", config.path], environment: environment)
        #expect(short.status == 78, "\(short.summary)")
        #expect(
            short.stderr == """
                gate: no usable configuration
                  mqtt (\(Self.milliseconds(short.stderr)) ms): \(Self.noPassword)
                Fix what is named above; `gate doctor` confirms it.

                """,
            "one short line per adapter and the next step: \(short.stderr)"
        )
        let run = try GateRunner.run(
            ["open", "-v", "--via", "mqtt", "--config", config.path],
            environment: environment
        )
        #expect(run.status == 78, "\(run.summary)")
        #expect(run.stderr.contains("no D-Bus session bus"), "\(run.stderr)")
        #expect(run.stderr.contains("headless"), "\(run.stderr)")
        #expect(run.stderr.contains("LoadCredentialEncrypted=mqtt-password"), "\(run.stderr)")

        let set = try SessionCommand.run(
            try gatePath(),
            ["secret", "set", "mqtt-password"],
            stdin: "never-stored-Pz5\n",
            environment: environment
        )
        #expect(set.status == 78, "\(set.summary)")
        #expect(set.stderr.contains("no D-Bus session bus") && set.stderr.contains("headless"), "\(set.stderr)")

        let status = try SessionCommand.run(
            try gatePath(),
            ["secret", "status", "mqtt-password"],
            stdin: nil,
            environment: environment
        )
        #expect(status.status == 78, "\(status.summary)")
        #expect(status.stdout.contains("mqtt-password: nowhere"))
    }

    @Test("auto: no password anywhere, a working UDP side still completes the opening")
    func autoWithUDP() throws {
        let broker = try MosquittoBroker(
            .tlsAndPassword(users: ["gate": "unknown-to-gate", "esp32": simulatorPassword])
        )
        let sim = try Simulator(simulatorMQTT(broker), environment: ["ESP32_SIM_MQTT_PASSWORD": simulatorPassword])
        let config = try secretConfig(udpPort: sim.udpPort, broker: broker)
        let session = try SecretSession()  // an empty keyring
        for environment in [session.environment(), GateRunner.isolatedEnvironment(["DBUS_SESSION_BUS_ADDRESS": ""])] {
            let run = try GateRunner.run(["open", "--json", "--config", config.path], environment: environment)
            #expect(run.status == 0, "\(run.summary)")
            #expect(try run.json()["adapter"] as? String == "udp")
        }
        #expect(try sim.activations().map(\.via) == ["udp", "udp"])
    }

    @Test("Input checks: empty, several lines and non-UTF-8 are refused with 64; a wrong name is a usage error")
    func refusedInput() throws {
        let session = try SecretSession()
        let inputs: [([UInt8], String)] = [
            ([], "empty"), ([0x0a], "empty"), ([0x0d, 0x0a], "empty"), (Array("one\ntwo\n".utf8), "more than one line"),
            ([0x61, 0xff, 0x62, 0x0a], "UTF-8"), ([0x61, 0x00, 0x62], "NUL"),
        ]
        for (input, words) in inputs {
            let run = try SessionCommand.run(
                try gatePath(),
                ["secret", "set", "mqtt-password"],
                input: Data(input),
                environment: session.environment()
            )
            #expect(run.status == 64, "\(input): \(run.summary)")
            #expect(run.stderr.contains(words), "\(input): \(run.stderr)")
        }
        #expect(try session.secretToolLookup().status != 0, "nothing may have been stored")
        let wrongName = try session.run(try gatePath(), ["secret", "set", "password"], stdin: "x\n")
        #expect(wrongName.status == 64, "\(wrongName.summary)")
        let asArgument = try session.run(try gatePath(), ["secret", "set", "mqtt-password", "my-password"])
        #expect(asArgument.status == 64, "the password is never taken as an argument: \(asArgument.summary)")
    }

    @Test("On a terminal: asked twice without echo; SIGINT during the prompt puts the echo back")
    func terminalPrompt() throws {
        let session = try SecretSession()
        let terminal = try PseudoTerminal()
        let typed = "typed-pw-Mz2"

        let process = Process()
        process.executableURL = try GateRunner.binary()
        process.arguments = ["secret", "set", "mqtt-password"]
        process.environment = session.environment()
        process.standardInput = terminal.slaveHandle
        process.standardOutput = terminal.slaveHandle
        process.standardError = terminal.slaveHandle
        let exited = try SessionCommand.spawn(process)
        var (screen, prompted) = terminal.read(until: "MQTT password: ")
        #expect(prompted, "no prompt: \(screen.debugDescription)")
        #expect(!terminal.echoes, "echo is on while the password is typed")
        terminal.type(typed + "\n")
        (screen, prompted) = terminal.read(until: "Again, to confirm: ")
        #expect(prompted, "no confirmation prompt: \(screen.debugDescription)")
        terminal.type(typed + "\n")
        guard SessionCommand.wait(exited, timeout: .seconds(20)) else {
            kill(process.processIdentifier, SIGKILL)
            Issue.record("gate secret set did not finish")
            return
        }
        let (rest, _) = terminal.read(until: "Stored", timeout: .seconds(2))
        #expect(process.terminationStatus == 0, "\(screen)\(rest)")
        #expect(!(screen + rest).contains(typed), "the password was echoed: \((screen + rest).debugDescription)")
        #expect(terminal.echoes, "echo stays off after the prompt")
        #expect(try session.secretToolLookup().stdout == typed)

        // Interrupted while the prompt waits: the terminal gets its echo back, the signal ends gate.
        let interrupted = Process()
        interrupted.executableURL = try GateRunner.binary()
        interrupted.arguments = ["secret", "set", "mqtt-password"]
        interrupted.environment = session.environment()
        interrupted.standardInput = terminal.slaveHandle
        interrupted.standardOutput = terminal.slaveHandle
        interrupted.standardError = terminal.slaveHandle
        let stopped = try SessionCommand.spawn(interrupted)
        (screen, prompted) = terminal.read(until: "MQTT password: ")
        #expect(prompted, "no prompt: \(screen.debugDescription)")
        #expect(!terminal.echoes)
        terminal.type("half-typed")
        kill(interrupted.processIdentifier, SIGINT)
        guard SessionCommand.wait(stopped, timeout: .seconds(10)) else {
            kill(interrupted.processIdentifier, SIGKILL)
            Issue.record("SIGINT did not end gate secret set")
            return
        }
        #expect(interrupted.terminationReason == .uncaughtSignal && interrupted.terminationStatus == SIGINT)
        #expect(terminal.echoes, "SIGINT left the terminal without echo")
        #expect(try session.secretToolLookup().stdout == typed, "the interrupted entry replaced the stored one")
    }

    @Test("Leak test: -vvv openings (success and failure) never show the password anywhere")
    func noLeaks() throws {
        let canary = "Canary-Pw-7Qx93LzT"
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": canary, "esp32": simulatorPassword]))
        let config = try secretConfig(udpPort: nil, broker: broker, extra: "timeout = 3.0\n")
        let session = try SecretSession()
        let environment = session.environment()
        var texts: [(String, String)] = []
        var samples: [(String, Data)] = []

        let set = try session.run(try gatePath(), ["secret", "set", "mqtt-password", "-vvv"], stdin: canary + "\n")
        #expect(set.status == 0, "\(set.summary)")
        texts += [("set stdout", set.stdout), ("set stderr", set.stderr)]
        // Control: the canary is really where gate takes it from, and the search finds it there.
        let lookup = try session.secretToolLookup()
        #expect(lookup.stdout.contains(canary), "the search would not even find the canary in secret-tool's output")

        /// One `-vvv` opening, sampling the running gate's argument vector and environment.
        func opening(_ label: String, expecting status: Int32) throws {
            let running = try GateRunner.start(
                ["open", "--via", "mqtt", "--force", "-vvv", "--config", config.path],
                environment: environment
            )
            let pid = running.pid
            var taken = 0
            while running.process.isRunning {
                for file in ["cmdline", "environ"] {
                    if let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)"), !data.isEmpty {
                        samples.append(("\(label) /proc/\(pid)/\(file)", data))
                        taken += 1
                    }
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            let run = try running.finish(timeout: .seconds(20))
            #expect(run.status == status, "\(label): \(run.summary)")
            #expect(taken >= 10, "\(label): only \(taken) samples of /proc were taken while gate ran")
            #expect(run.stderr.count > 200, "\(label): -vvv printed next to nothing: \(run.stderr)")
            texts += [("\(label) stdout", run.stdout), ("\(label) stderr", run.stderr)]
        }

        do {  // success: the relay held for 1.5 s, so there is time to sample
            let sim = try Simulator(
                simulatorMQTT(broker) + ["--hold-ms", "1500"],
                environment: ["ESP32_SIM_MQTT_PASSWORD": simulatorPassword]
            )
            try opening("success", expecting: 0)
            #expect(try sim.activations().count == 1)
            try sim.stop()
        }
        do {  // failure: the relay never releases, 124 after the 3 s budget
            let sim = try Simulator(
                simulatorMQTT(broker) + ["--fault", "no-release"],
                environment: ["ESP32_SIM_MQTT_PASSWORD": simulatorPassword]
            )
            try opening("failure", expecting: 124)
            try sim.stop()
        }
        let json = try GateRunner.run(
            ["open", "--via", "mqtt", "--force", "--json", "-vvv", "--config", config.path],
            environment: environment
        )
        texts += [("--json stdout", json.stdout), ("--json stderr", json.stderr)]
        let status = try session.run(try gatePath(), ["secret", "status", "mqtt-password", "-vvv"])
        texts += [("status stdout", status.stdout), ("status stderr", status.stderr)]
        let show = try GateRunner.run(["config", "show", "--config", config.path], environment: environment)
        texts += [("config show", show.stdout + show.stderr)]

        let runtime = try #require(environment["GATE_RUNTIME_DIR"])
        let state = try #require(environment["GATE_STATE_DIR"])
        for path in [runtime + "/status.json", state + "/history.jsonl"] {
            let data = try #require(FileManager.default.contents(atPath: path), "\(path) was not written")
            samples.append((path, data))
        }

        let needle = Data(canary.utf8)
        for (label, text) in texts {
            #expect(!text.contains(canary), "the password appears in \(label)")
        }
        for (label, data) in samples {
            #expect(data.range(of: needle) == nil, "the password appears in \(label)")
        }
    }

    @Test("CLibSecret's hand-written prototypes match the real libsecret and GLib headers")
    func shimMatchesHeaders() throws {
        let shim = packageRoot.appendingPathComponent("Sources/CLibSecret/shim.h").path
        let run = try ShimCheck.run(
            shim: shim,
            after: "libsecret/secret.h",
            define: "GATE_SECRET_CHECK_PROTOTYPES",
            cflags: "$(pkg-config --cflags libsecret-1)"
        )
        #expect(run.status == 0, "needs libsecret-1-dev and pkg-config: \(run.summary)")
    }

    @Test("gate does not link libsecret or GLib (they are loaded only when used)")
    func notLinked() throws {
        let run = try SessionCommand.run(
            "/usr/bin/ldd",
            [try gatePath()],
            stdin: nil,
            environment: ProcessInfo.processInfo.environment
        )
        #expect(run.status == 0, "\(run.summary)")
        for library in ["libsecret", "libglib", "libgio", "libgobject"] {
            #expect(!run.stdout.contains(library), "gate links \(library):\n\(run.stdout)")
        }
    }
}
