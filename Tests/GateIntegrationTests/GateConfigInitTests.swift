import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder for one test, removed at the end.
private final class Scratch {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("gate-init-\(UUID().uuidString)")
    var path: String { url.path }

    init() throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}

private func read(_ path: String) -> String? {
    try? String(contentsOfFile: path, encoding: .utf8)
}

@Suite("gate config init: a starter file where the search finds it", .serialized)
struct GateConfigInitTests {
    @Test("--udp with $GATE_CONFIG: writes there (folders made), names the path, and the file validates")
    func writesWhereTheSearchLooks() throws {
        let scratch = try Scratch()
        let path = scratch.path + "/config/gate/gate.toml"
        let environment = GateRunner.isolatedEnvironment(["GATE_CONFIG": path])
        let run = try GateRunner.run(["config", "init", "--udp", "10.1.2.3"], environment: environment)
        #expect(run.status == 0, "\(run.summary)")
        #expect(
            run.stdout
                == "Wrote \(path) ($GATE_CONFIG).\nNext: run `gate doctor` to check that the ESP32 can be reached.\n",
            "\(run.summary)"
        )
        #expect(run.stderr.isEmpty, "\(run.summary)")
        let text = try #require(read(path))
        #expect(text.contains("\n[udp]\n") && text.contains("\nhost = \"10.1.2.3\"\n"), "\(text)")
        #expect(text.contains("\n#[mqtt]\n"), "[mqtt] stays commented out without --mqtt:\n\(text)")
        let info = try FileManager.default.attributesOfItem(atPath: path)
        #expect((info[.posixPermissions] as? Int) == 0o644)

        let check = try GateRunner.run(["config", "check"], environment: environment)
        #expect(check.status == 0, "\(check.summary)")
        #expect(
            check.stdout.hasPrefix(
                "\(path): valid\n  udp:  10.1.2.3 port 8080, complete cycle within 2.0 s\n  mqtt: not configured\n"
            ),
            "\(check.summary)"
        )
    }

    @Test("An existing file is never replaced: exit 73, the path named, the file unchanged")
    func refusesToOverwrite() throws {
        let scratch = try Scratch()
        let path = scratch.path + "/gate.toml"
        let mine = "[udp]\nhost = \"10.9.9.9\"\n"
        try mine.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try GateRunner.run(["config", "init", "--config", path, "--udp", "10.1.2.3"])
        #expect(run.status == 73, "\(run.summary)")
        #expect(
            run.stderr == "gate: \(path) already exists; nothing was written. Edit it (then `gate config check`), "
                + "or move it away and run `gate config init` again.\n",
            "\(run.summary)"
        )
        #expect(run.stdout.isEmpty)
        #expect(read(path) == mine)

        // A dangling link there is not followed either.
        let link = scratch.path + "/link.toml"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: scratch.path + "/elsewhere.toml")
        let linked = try GateRunner.run(["config", "init", "--config", link])
        #expect(linked.status == 73, "\(linked.summary)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/elsewhere.toml"))
    }

    @Test(
        "--mqtt switches [mqtt] on; without --udp, [udp] is commented out; no host at all leaves a placeholder to change"
    )
    func tables() throws {
        let scratch = try Scratch()
        let both = scratch.path + "/both.toml"
        _ = try GateRunner.run(["config", "init", "--config", both, "--udp", "esp32.lan", "--mqtt", "broker.lan"])
        let checkBoth = try GateRunner.run(["config", "check", "--config", both])
        #expect(checkBoth.status == 0, "\(checkBoth.summary)")
        #expect(checkBoth.stdout.contains("\n  udp:  esp32.lan port 8080, complete cycle within 2.0 s\n"))
        #expect(
            checkBoth.stdout.contains(
                "\n  mqtt: broker.lan port 1883, no TLS, anonymous, complete cycle within 5.0 s\n"
            ),
            "\(checkBoth.summary)"
        )

        let mqttOnly = scratch.path + "/mqtt.toml"
        _ = try GateRunner.run(["config", "init", "--config", mqttOnly, "--mqtt", "broker.lan"])
        let checkMQTT = try GateRunner.run(["config", "check", "--config", mqttOnly])
        #expect(checkMQTT.status == 0, "\(checkMQTT.summary)")
        #expect(checkMQTT.stdout.contains("\n  udp:  not configured\n"), "\(checkMQTT.summary)")

        let bare = scratch.path + "/bare.toml"
        let run = try GateRunner.run(["config", "init", "--config", bare])
        #expect(
            run.stdout
                == "Wrote \(bare) (--config).\nNext: set udp.host in it to the ESP32's address, then run `gate doctor`.\n",
            "\(run.summary)"
        )
        let checkBare = try GateRunner.run(["config", "check", "--config", bare])
        #expect(checkBare.status == 0, "\(checkBare.summary)")
        #expect(checkBare.stdout.contains("\n  udp:  192.0.2.50 port 8080"), "\(checkBare.summary)")
        #expect(read(bare)?.contains("192.0.2.50 is a documentation address that is on no real network") == true)
    }

    @Test("A host that is not an address or a host name: exit 64 naming the option, nothing written")
    func invalidHost() throws {
        let scratch = try Scratch()
        let path = scratch.path + "/gate.toml"
        let run = try GateRunner.run(["config", "init", "--config", path, "--udp", "my esp32"])
        #expect(run.status == 64, "\(run.summary)")
        #expect(run.stderr.hasPrefix("gate: --udp: "), "\(run.summary)")
        #expect(!run.stderr.contains("udp.host"), "the option is named, not the key: \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test(
        "An ordinary account (nobody): ~/.config/gate/gate.toml, which `gate config path` then finds",
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root to drop to nobody with setpriv"
        )
    )
    func userFile() throws {
        let scratch = try Scratch()
        let home = scratch.path + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        chown(home, 65534, 65534)
        chmod(scratch.path, 0o755)
        let asNobody = { (arguments: [String]) in
            try MosquittoBroker.runTool(
                "/usr/bin/env",
                [
                    "-i", "HOME=\(home)", "PATH=/usr/bin:/bin", "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                    "--clear-groups", try GateRunner.binary().path,
                ] + arguments,
                timeout: .seconds(30)
            )
        }
        let path = home + "/.config/gate/gate.toml"
        let run = try asNobody(["config", "init", "--udp", "10.1.2.3"])
        #expect(run.status == 0, "\(run.summary)")
        #expect(
            run.stdout == "Wrote \(path) (user configuration).\n"
                + "Next: run `gate doctor` to check that the ESP32 can be reached.\n",
            "\(run.summary)"
        )
        let found = try asNobody(["config", "path"])
        #expect(found.status == 0 && found.stdout == path + "\n", "\(found.summary)")
    }

    @Test(
        "root: /etc/gate/gate.toml (the service's), written into an overlay of /etc in a private mount namespace",
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
                && !FileManager.default.fileExists(atPath: "/etc/gate/gate.toml"),
            "needs root, unshare(1) and no /etc/gate/gate.toml on this machine"
        )
    )
    func systemFile() throws {
        let scratch = try Scratch()
        for folder in ["upper", "work", "home"] {
            try FileManager.default.createDirectory(
                atPath: scratch.path + "/" + folder,
                withIntermediateDirectories: true
            )
        }
        let gate = try GateRunner.binary().path
        // The overlay's writes land in upper/; the machine's own /etc is never touched.
        let script = """
            mount -t overlay overlay -o lowerdir=/etc,upperdir=\(scratch.path)/upper,workdir=\(scratch.path)/work /etc \
            || { echo 'overlay unavailable' >&2; exit 99; }
            \(gate) config init --udp 10.1.2.3 && \(gate) config check && \(gate) config init --udp 10.1.2.3
            """
        let run = try MosquittoBroker.runTool(
            "/usr/bin/env",
            [
                "-i", "HOME=\(scratch.path)/home", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script,
            ],
            timeout: .seconds(60)
        )
        try #require(run.status != 99, "overlayfs cannot be mounted here: \(run.summary)")
        #expect(run.status == 73, "the second init refuses: \(run.summary)")
        #expect(
            run.stdout.hasPrefix(
                "Wrote /etc/gate/gate.toml (system configuration).\n"
                    + "Next: run `gate doctor` to check that the ESP32 can be reached.\n/etc/gate/gate.toml: valid\n"
            ),
            "\(run.summary)"
        )
        #expect(
            run.stderr.hasPrefix("gate: /etc/gate/gate.toml already exists; nothing was written."),
            "\(run.summary)"
        )
        #expect(read(scratch.path + "/upper/gate/gate.toml")?.contains("host = \"10.1.2.3\"") == true)
        #expect(!FileManager.default.fileExists(atPath: "/etc/gate/gate.toml"))
    }
}
