import Foundation
import GateTestSupport
import Testing

/// Configuration errors stop everything before a trigger is sent.
@Suite("Configuration from the command line", .serialized)
struct GateConfigTests {
    @Test(
        "Invalid configurations exit 78, name the key, and send nothing",
        arguments: [
            ("[udp]\nhost = \"127.0.0.1\"\nport = PORT\ntimeuot = 2.0\n", "udp.timeuot"),
            ("[udp]\nhost = \"127.0.0.1\"\nport = 70000\n", "udp.port"),
            ("[udp]\nhost = \"127.0.0.1\"\nport = PORT\ntimeout = 0\n", "udp.timeout"),
            ("[udp]\nhost = \"not a host\"\nport = PORT\n", "udp.host"),
            (
                "[udp]\nhost = \"127.0.0.1\"\nport = PORT\n[mqtt]\nhost = \"localhost\"\npassword = \"hunter2\"\n",
                "mqtt.password"
            ),
            ("[udp]\nhost = \"127.0.0.1\"\nport = PORT\n[runtime]\ncooldown = -1\n", "runtime.cooldown"),
            ("[udp]\nhost = \"127.0.0.1\"\nport = \"PORT\"\n", "udp.port"),
        ]
    )
    func invalid(text: String, key: String) throws {
        let sim = try Simulator()
        let config = try TestConfig(text.replacingOccurrences(of: "PORT", with: String(sim.udpPort)))
        let run = try GateRunner.run(["open", "--config", config.path])
        #expect(run.status == 78, "\(run.summary)")
        #expect(run.stderr.contains(key), "the key \(key) must be named: \(run.stderr)")
        #expect(run.stderr.contains(config.path), "the file must be named")
        #expect(!run.stderr.contains("hunter2"), "a password value is never echoed")
        #expect(try sim.activations().isEmpty, "nothing may be sent with an invalid configuration")

        let check = try GateRunner.run(["config", "check", "--config", config.path])
        #expect(check.status == 78)
        #expect(check.stderr.contains(key))
    }

    /// Issue 28, item 11: HA's PRESS on the ESP32's trigger topic would reach the relay past
    /// gate's lock and cooldown; `config check` refuses it, as `gate daemon` does at start.
    @Test("A Home Assistant topic equal to an ESP32 topic is refused (78, the key, file:line)")
    func homeAssistantTopicCollision() throws {
        let config = try TestConfig(
            """
            [mqtt]
            host = "127.0.0.1"
            trigger_topic = "gate/garden_gate/open"
            [homeassistant]

            """
        )
        let check = try GateRunner.run(["config", "check", "--config", config.path])
        #expect(check.status == 78, "\(check.summary)")
        #expect(check.stderr.contains("\(config.path):3: mqtt.trigger_topic"), "\(check.stderr)")
        #expect(check.stderr.contains("command topic"), "\(check.stderr)")
        let daemon = try GateRunner.run(["daemon", "--config", config.path])
        #expect(daemon.status == 78, "\(daemon.summary)")
    }

    @Test("A syntax error names the line")
    func syntaxLine() throws {
        let config = try TestConfig("[udp]\nhost = \"127.0.0.1\"\nport = = 5\n")
        let run = try GateRunner.run(["config", "check", "--config", config.path])
        #expect(run.status == 78)
        #expect(run.stderr.contains("\(config.path):3"), "\(run.stderr)")
    }

    @Test("--json with an invalid configuration still prints one JSON object")
    func jsonOnConfigError() throws {
        let config = try TestConfig("[udp]\nport = 8080\n")
        let run = try GateRunner.run(["open", "--json", "--config", config.path])
        #expect(run.status == 78)
        let json = try run.json()
        #expect(json["outcome"] as? String == "error")
        #expect(json["error"] as? String == "configurationMissing")
        #expect((json["message"] as? String)?.contains("udp.host") == true)
    }

    @Test("No configuration anywhere: 78 and the places searched")
    func noConfiguration() throws {
        let run = try GateRunner.run(["open"])
        #expect(run.status == 78, "\(run.summary)")
        #expect(
            run.stderr.contains("/etc/gate/gate.toml") || !FileManager.default.fileExists(atPath: "/etc/gate/gate.toml")
        )
        #expect(
            run.stderr.contains("no configuration file found")
                || FileManager.default.fileExists(atPath: "/etc/gate/gate.toml")
        )
    }

    @Test(
        "No configuration anywhere: each config command says so once, with one gate: prefix",
        arguments: [["config", "path"], ["config", "check"], ["config", "show"], ["open"]]
    )
    func noConfigurationMessage(arguments: [String]) throws {
        guard !FileManager.default.fileExists(atPath: "/etc/gate/gate.toml") else { return }  // a real install here
        let run = try GateRunner.run(arguments)
        #expect(run.status == 78, "\(run.summary)")
        #expect(run.stderr.contains("no configuration file found (looked in "), "\(run.summary)")
        #expect(!run.stderr.contains("gate: gate:"), "\(run.summary)")
        #expect(!run.stderr.contains(": : "), "\(run.summary)")
    }

    @Test("An environment value is taken byte for byte, a leading combining mark included")
    func environmentValueBytes() throws {
        let path = "\u{301}no-such-gate.toml"  // relative, so it begins with the mark
        let run = try GateRunner.run(
            ["config", "path"],
            environment: GateRunner.isolatedEnvironment(["GATE_CONFIG": path])
        )
        #expect(run.status == 78, "\(run.summary)")
        // Bytes, not Characters: on screen the mark joins whatever precedes it.
        #expect(Array(run.stdout.utf8) == Array((path + "\n").utf8), "\(run.summary)")
    }

    @Test("--config naming a missing file is an error, not a reason to look elsewhere")
    func missingExplicitFile() throws {
        let run = try GateRunner.run(["open", "--config", "/nonexistent/gate.toml"])
        #expect(run.status == 78)
        #expect(run.stderr.contains("/nonexistent/gate.toml"))
        #expect(run.stderr.contains("No such file"))
    }

    @Test("Discovery order: --config, then $GATE_CONFIG, then $XDG_CONFIG_HOME/gate/gate.toml")
    func discoveryOrder() throws {
        let option = try TestConfig("[udp]\nhost = \"127.0.0.1\"\n")
        let environment = try TestConfig("[udp]\nhost = \"127.0.0.2\"\n")
        let xdg = try TestConfig("[udp]\nhost = \"127.0.0.3\"\n")
        let xdgHome = xdg.directory.appendingPathComponent("xdg")
        try FileManager.default.createDirectory(
            at: xdgHome.appendingPathComponent("gate"),
            withIntermediateDirectories: true
        )
        try FileManager.default.copyItem(
            atPath: xdg.path,
            toPath: xdgHome.appendingPathComponent("gate/gate.toml").path
        )

        let all = GateRunner.isolatedEnvironment(["GATE_CONFIG": environment.path, "XDG_CONFIG_HOME": xdgHome.path])
        #expect(
            try GateRunner.run(["config", "path", "--config", option.path], environment: all).stdout == option.path
                + "\n"
        )
        #expect(try GateRunner.run(["config", "path"], environment: all).stdout == environment.path + "\n")
        let xdgOnly = GateRunner.isolatedEnvironment(["XDG_CONFIG_HOME": xdgHome.path])
        #expect(
            try GateRunner.run(["config", "path"], environment: xdgOnly).stdout == xdgHome.path + "/gate/gate.toml\n"
        )
        let shown = try GateRunner.run(["config", "show"], environment: xdgOnly)
        #expect(shown.stdout.contains("127.0.0.3"))
    }

    @Test("config show prints every default and re-parses; config check explains")
    func showAndCheck() throws {
        let config = try TestConfig(
            "[udp]\nhost = \"192.168.1.50\"\n[mqtt]\nhost = \"broker.example.de\"\ntls = true\nusername = \"gate\"\n"
        )
        let shown = try GateRunner.run(["config", "show", "--config", config.path])
        #expect(shown.status == 0, "\(shown.summary)")
        #expect(shown.stdout.contains("port = 8080"))
        #expect(shown.stdout.contains("port = 8883"))
        #expect(shown.stdout.contains("reset_delay = 3.0"))
        let again = try TestConfig(shown.stdout)
        let recheck = try GateRunner.run(["config", "check", "--config", again.path])
        #expect(recheck.status == 0, "show's output must be a valid configuration: \(recheck.summary)")
        #expect(recheck.stdout.contains("192.168.1.50"))
        #expect(recheck.stdout.contains("broker.example.de"))
    }

    @Test(
        "A bad command line is a usage error (64)",
        arguments: [
            ["open", "--via", "carrier-pigeon"], ["open", "--source", "has space"], ["open", "--bogus"],
        ]
    )
    func usage(arguments: [String]) throws {
        let run = try GateRunner.run(arguments)
        #expect(run.status == 64, "\(run.summary)")
    }
}
