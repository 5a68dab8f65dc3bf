import Foundation
import GateTestSupport
import Testing

/// The files in `deploy/` checked with the tools that will apply them on the Pi:
/// systemd-analyze (verify, security), systemd-sysusers and systemd-tmpfiles against a
/// temporary root, the real `gate config check`, and the install script.
/// Debian packages: `systemd` (systemd-analyze, -sysusers, -tmpfiles) and `shellcheck`.
@Suite("deploy/: the systemd unit, users, folders, example config and installer", .serialized)
struct DeployTests {
    /// The highest `systemd-analyze security` exposure the unit may have (issue 6).
    static let maximumExposure = 2.0

    @Test("systemd-analyze verify finds nothing to complain about in gate.service")
    func verifyUnit() throws {
        let unit = try String(contentsOf: Deploy.file("systemd/gate.service"), encoding: .utf8)
        try #require(
            unit.split(separator: "\n").contains { $0 == Deploy.execStart },
            "the unit must run \(Deploy.execStart)"
        )
        let (folder, copy) = try Deploy.verifiableCopy(of: unit, named: "gate.service")
        defer { try? FileManager.default.removeItem(at: folder) }

        let run = try Tool.run("systemd-analyze", ["verify", copy.path], package: "systemd")
        #expect(run.status == 0, "\(run.summary)")
        let complaints = run.lines.filter { $0.contains("gate.service") || $0.contains(folder.path) }
        #expect(
            complaints.isEmpty,
            "systemd-analyze verify warned about the unit:\n\(complaints.joined(separator: "\n"))"
        )
    }

    @Test(
        "systemd-analyze --user verify finds nothing to complain about in gate-user.service, which runs gate daemon as a notify service"
    )
    func verifyUserUnit() throws {
        let unit = try String(contentsOf: Deploy.file("systemd/gate-user.service"), encoding: .utf8)
        let lines = Set(unit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        for required in [
            Deploy.execStart, "Type=notify", "NotifyAccess=main", "ExecReload=/bin/kill -HUP $MAINPID",
            "WantedBy=default.target", "LimitCORE=0",
        ] {
            #expect(lines.contains(required), "gate-user.service lacks \(required)")
        }
        // A user unit runs as its user: no User=, and nothing that needs privileges.
        #expect(
            !lines.contains {
                $0.hasPrefix("User=") || $0.hasPrefix("SupplementaryGroups=") || $0.hasPrefix("DeviceAllow=")
            }
        )

        let (folder, copy) = try Deploy.verifiableCopy(of: unit, named: "gate-user.service")
        defer { try? FileManager.default.removeItem(at: folder) }
        // The user manager wants its runtime folder ("Failed to lookup RuntimeDirectory
        // path" without one): a private one of the test's own.
        let runtime = folder.appendingPathComponent("xdg-runtime")
        try FileManager.default.createDirectory(
            at: runtime,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime.path
        let run = try Tool.run(
            "systemd-analyze",
            ["--user", "verify", copy.path],
            package: "systemd",
            environment: environment
        )
        #expect(run.status == 0, "\(run.summary)")
        let complaints = run.lines.filter { $0.contains("gate-user.service") || $0.contains(folder.path) }
        #expect(
            complaints.isEmpty,
            "systemd-analyze --user verify warned about the unit:\n\(complaints.joined(separator: "\n"))"
        )
    }

    @Test("systemd-analyze security --offline=true: overall exposure at most 2.0")
    func securityExposure() throws {
        let unit = try Deploy.file("systemd/gate.service")
        let run = try Tool.run(
            "systemd-analyze",
            ["security", "--offline=true", "--no-pager", unit.path],
            package: "systemd"
        )
        #expect(run.status == 0, "\(run.summary)")
        // "→ Overall exposure level for gate.service: 1.7 OK 🙂"
        let line = try #require(
            run.lines.first { $0.contains("Overall exposure level for gate.service:") },
            "no overall exposure line:\n\(run.summary)"
        )
        let number = try #require(
            line.split(separator: ":").last?.split(separator: " ").first,
            "cannot read the exposure from: \(line)"
        )
        let exposure = try #require(Double(number), "not a number: \(number) in \(line)")
        #expect(
            exposure <= Self.maximumExposure,
            "exposure \(exposure) is above \(Self.maximumExposure):\n\(run.stdout)"
        )
        #expect(
            run.lines.filter { $0.contains("gate.service:") && !$0.contains("Overall exposure") }.isEmpty,
            "warnings about the unit:\n\(run.stderr)"
        )
    }

    @Test("The unit keeps the contract: notify, watchdog, user, devices, credential, shared /run/gate")
    func unitContract() throws {
        let unit = try String(contentsOf: Deploy.file("systemd/gate.service"), encoding: .utf8)
        let lines = Set(unit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        for required in [
            "Type=notify", "NotifyAccess=main", "WatchdogSec=30", "Restart=on-failure",
            "ExecReload=/bin/kill -HUP $MAINPID", "User=gate", "Group=gate", "SupplementaryGroups=gpio",
            "UMask=0007", "ReadWritePaths=/run/gate", "StateDirectory=gate", "ConfigurationDirectory=gate",
            "LoadCredentialEncrypted=mqtt-password", "DevicePolicy=closed", "DeviceAllow=char-gpiochip rw",
            "MemoryDenyWriteExecute=yes", "CapabilityBoundingSet=", "NoNewPrivileges=yes",
            // No core dump while the MQTT password may be in memory.
            "LimitCORE=0",
        ] {
            #expect(lines.contains(required), "gate.service lacks \(required)")
        }
        // A stop must not kill an opening mid-cycle: the longest one with the defaults is
        // UDP 2 s + MQTT 5 s + the reset delay 3 s + the pipeline's overdue graces (0.5 s),
        // plus 15 s for a loaded Pi and the link's teardown.
        let stop = lines.first { $0.hasPrefix("TimeoutStopSec=") }.map {
            $0.dropFirst("TimeoutStopSec=".count).replacingOccurrences(of: "s", with: "")
        }
        #expect(
            stop.flatMap { Int($0) }.map { Double($0) >= 2 + 5 + 3 + 0.5 + 15 } == true,
            "TimeoutStopSec \(stop ?? "missing")"
        )
        // systemd would delete a RuntimeDirectory= when the service stops, taking the lock and
        // status that desktop users share; tmpfiles.d makes /run/gate instead.
        #expect(
            !lines.contains { $0.hasPrefix("RuntimeDirectory") },
            "/run/gate comes from tmpfiles.d, not RuntimeDirectory="
        )
        // PrivateUsers= would map the supplementary group gpio to nobody.
        #expect(!lines.contains { $0.hasPrefix("PrivateUsers=yes") || $0.hasPrefix("PrivateDevices=yes") })
    }

    @Test("systemd-sysusers and systemd-tmpfiles make the user, the groups and the shared folders")
    func usersAndFolders() throws {
        try #require(getuid() == 0, "systemd-tmpfiles must run as root to give the folders to user and group gate")
        let root = try Deploy.temporaryFolder("root")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("etc"),
            withIntermediateDirectories: true
        )

        let sysusers = try Tool.run(
            "systemd-sysusers",
            ["--root=\(root.path)", Deploy.file("systemd/gate.sysusers").path],
            package: "systemd"
        )
        try #require(sysusers.status == 0, "\(sysusers.summary)")
        let groups = try Deploy.table(root.appendingPathComponent("etc/group"))
        let users = try Deploy.table(root.appendingPathComponent("etc/passwd"))
        let gateGroup = try #require(groups["gate"], "no group gate in etc/group: \(groups)")
        let gpioGroup = try #require(groups["gpio"], "no group gpio in etc/group: \(groups)")
        let gateUser = try #require(users["gate"], "no user gate in etc/passwd: \(users)")
        // passwd: name:x:uid:gid:gecos:home:shell; group: name:x:gid:members
        #expect(gateUser[3] == gateGroup[2], "gate's primary group must be gate")
        #expect(gateUser[6] == "/usr/sbin/nologin", "no login shell: \(gateUser)")
        #expect(gateUser[5] == "/var/lib/gate")
        #expect(gpioGroup[3].split(separator: ",").contains("gate"), "gate must be in gpio: \(gpioGroup)")
        let uid = try #require(UInt32(gateUser[2]))
        let gid = try #require(UInt32(gateGroup[2]))
        #expect(uid < 1000 && gid < 1000, "gate is a system user and group")

        // tmpfiles resolves gate in the temporary root's own etc/passwd and etc/group.
        let tmpfiles = try Tool.run(
            "systemd-tmpfiles",
            ["--root=\(root.path)", "--create", Deploy.file("systemd/gate.tmpfiles").path],
            package: "systemd"
        )
        #expect(tmpfiles.status == 0, "\(tmpfiles.summary)")
        #expect(tmpfiles.stderr.isEmpty, "\(tmpfiles.summary)")
        for (path, owner) in [("run/gate", UInt32(0)), ("var/lib/gate", uid)] {
            var info = stat()
            try #require(stat(root.appendingPathComponent(path).path, &info) == 0, "\(path) was not created")
            #expect(info.st_mode & S_IFMT == S_IFDIR, "\(path) is a folder")
            #expect(
                String(info.st_mode & 0o7777, radix: 8) == "2770",
                "\(path): mode 2770 (setgid, group rwx, others nothing)"
            )
            #expect(info.st_gid == gid, "\(path) belongs to group gate")
            #expect(info.st_uid == owner, "\(path) owner \(info.st_uid), expected \(owner)")
        }
    }

    @Test("gate config check accepts deploy/gate.toml.example, whose [mqtt] is commented out")
    func exampleConfig() throws {
        let example = try Deploy.file("gate.toml.example")
        let run = try GateRunner.run(["config", "check", "--config", example.path])
        #expect(run.status == 0, "\(run.summary)")
        let text = try String(contentsOf: example, encoding: .utf8)
        #expect(!text.lowercased().contains("password ="), "no password in the example")
        for section in ["[udp]", "[mqtt]", "[button]", "[runtime]"] {
            #expect(text.contains(section), "the example shows \(section)")
        }
        // A UDP-only user who edits udp.host must not get MQTT failures: [mqtt] is there, commented out.
        #expect(
            text.contains("\n#[mqtt]\n") && text.contains("\n#host = \"broker.example.de\"\n"),
            "[mqtt] and its host are commented out"
        )
        #expect(run.stdout.contains("\n  mqtt: not configured\n"), "\(run.summary)")
        #expect(!text.contains("deploy/"), "the example names installed paths, not the source tree")
    }

    @Test("install.sh is shellcheck-clean and installs every file below DESTDIR")
    func installScript() throws {
        let script = try Deploy.file("install.sh")
        #expect(FileManager.default.isExecutableFile(atPath: script.path), "install.sh must be executable")
        let check = try Tool.run("shellcheck", [script.path], package: "shellcheck")
        #expect(check.status == 0, "\(check.summary)")

        let destination = try Deploy.temporaryFolder("destdir")
        defer { try? FileManager.default.removeItem(at: destination) }
        let gate = try GateRunner.binary()
        var environment = ProcessInfo.processInfo.environment
        environment["DESTDIR"] = destination.path
        let install = try Tool.run(
            "bash",
            [script.path, "--binary", gate.path],
            package: "bash",
            environment: environment
        )
        #expect(install.status == 0, "\(install.summary)")
        for (path, mode) in [
            ("usr/bin/gate", "755"),
            ("usr/lib/systemd/system/gate.service", "644"),
            ("usr/lib/systemd/user/gate-user.service", "644"),
            ("usr/lib/sysusers.d/gate.conf", "644"),
            ("usr/lib/tmpfiles.d/gate.conf", "644"),
            ("usr/lib/udev/rules.d/99-gate-gpio.rules", "644"),
            // The docs at the Debian package's paths: gate doctor's fixes name them.
            ("usr/share/doc/gate/examples/gate.toml", "644"),
            ("usr/share/doc/gate/README.md", "644"),
            ("usr/share/doc/gate/guide.md", "644"),
            ("usr/share/doc/gate/deploy.md", "644"),
            ("usr/share/doc/gate/homeassistant.md", "644"),
            ("usr/share/doc/gate/examples/mosquitto-homeassistant.acl", "644"),
        ] {
            var info = stat()
            guard stat(destination.appendingPathComponent(path).path, &info) == 0 else {
                Issue.record("install.sh did not install \(path)\n\(install.summary)")
                continue
            }
            #expect(String(info.st_mode & 0o7777, radix: 8) == mode, "\(path): mode \(mode)")
        }
        // With DESTDIR nothing outside it is touched: no users, no folders, no reloads.
        #expect(!install.stdout.contains("+ systemd-sysusers"), "\(install.summary)")
        #expect(!install.stdout.contains("+ systemctl"), "\(install.summary)")

        // --dry-run shows the whole plan and never enables the service.
        let dryRun = try Tool.run("bash", [script.path, "--dry-run", "--binary", gate.path], package: "bash")
        #expect(dryRun.status == 0, "\(dryRun.summary)")
        for step in [
            "+ systemd-sysusers gate.conf", "+ systemd-tmpfiles --create gate.conf", "+ systemctl daemon-reload",
        ] {
            #expect(dryRun.stdout.contains(step), "--dry-run lacks \(step)\n\(dryRun.summary)")
        }
        #expect(!dryRun.stdout.contains("+ systemctl enable"), "install.sh must not enable the service")
    }

    @Test("The packaging scripts are shellcheck-clean; the maintainer scripts are POSIX sh and never start the service")
    func packagingScripts() throws {
        let root = try Deploy.file("debian").deletingLastPathComponent().deletingLastPathComponent()
        let scripts = [
            "scripts/package-deb", "scripts/install-test", "scripts/soak", "scripts/fuzz", "scripts/sanitizers",
            "scripts/bench/all", "scripts/bench/daemon", "scripts/bench/run", "scripts/bench/mqtt-timeline",
            "scripts/bench/remote",
            "scripts/chaos", "scripts/test", "scripts/demo", "scripts/soak-daemon",
            "scripts/ha-test", "scripts/explore",
            "scripts/notify-test", "scripts/firmware-test", "scripts/check-docs",
        ]
        .map { root.appendingPathComponent($0).path }
        .filter { FileManager.default.fileExists(atPath: $0) }
        // Every shell script in scripts/ and scripts/bench/ is in the list (a new one is not
        // left out silently); panel-test is not shellcheck-clean yet (SC2317/SC2016 notes).
        for folder in ["scripts", "scripts/bench"] {
            let names = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)
            for name in names where name != "panel-test" {
                let path = root.appendingPathComponent(folder).appendingPathComponent(name).path
                guard let head = FileManager.default.contents(atPath: path)?.prefix(32),
                    String(decoding: head, as: UTF8.self).hasPrefix("#!/usr/bin/env bash")
                else { continue }
                #expect(scripts.contains(path), "\(folder)/\(name) is not shellchecked by this test")
            }
        }
        let bash = try Tool.run("shellcheck", ["-x"] + scripts, package: "shellcheck")
        #expect(bash.status == 0, "\(bash.summary)")
        let maintainer = try ["postinst", "prerm", "postrm"].map { try Deploy.file("debian/\($0)").path }
        let sh = try Tool.run("shellcheck", ["-s", "sh"] + maintainer, package: "shellcheck")
        #expect(sh.status == 0, "\(sh.summary)")
        let postinst = try String(contentsOfFile: maintainer[0], encoding: .utf8)
        // Commands, not the printed hint that tells the user to enable it after configuring.
        for line in postinst.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) })
        where line.hasPrefix("systemctl") {
            let words = line.split(separator: " ")
            #expect(
                !words.contains("enable") && !words.contains("start"),
                "postinst must not start the service: \(line)"
            )
        }
    }
}

/// The repository's `deploy/` folder, found from this file's own path.
enum Deploy {
    static func file(_ relative: String, source: String = #filePath) throws -> URL {
        // Tests/GateIntegrationTests/DeployTests.swift -> repository root
        let root = URL(fileURLWithPath: source).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let url = root.appendingPathComponent("deploy").appendingPathComponent(relative)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw GateRunner.Failure("deploy/\(relative) is missing (looked at \(url.path))")
        }
        return url
    }

    static let execStart = "ExecStart=/usr/bin/gate daemon"

    /// `unit` in a folder of its own under its own name, for `systemd-analyze verify`,
    /// which checks that ExecStart's binary exists: pointed at the gate just built,
    /// otherwise unchanged.
    static func verifiableCopy(of unit: String, named name: String) throws -> (folder: URL, copy: URL) {
        let folder = try temporaryFolder("verify")
        let copy = folder.appendingPathComponent(name)
        let gate = try GateRunner.binary()
        try unit.replacingOccurrences(of: execStart, with: "ExecStart=\(gate.path) daemon")
            .write(to: copy, atomically: true, encoding: .utf8)
        return (folder, copy)
    }

    static func temporaryFolder(_ label: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-deploy-\(label)-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// etc/passwd or etc/group as name -> fields.
    static func table(_ url: URL) throws -> [String: [String]] {
        let text = try String(contentsOf: url, encoding: .utf8)
        var table: [String: [String]] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            if let name = fields.first { table[name] = fields }
        }
        return table
    }
}

/// An external tool, run to completion with its output captured.
enum Tool {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { (stdout + "\n" + stderr).split(separator: "\n").map(String.init) }
        var summary: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
    }

    static func locate(_ name: String, package: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders =
            path.split(separator: ":").map(String.init) + ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        for folder in folders where !folder.isEmpty {
            let candidate = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw GateRunner.Failure(
            "\(name) is not installed (not in PATH \(path)); install the Debian package \(package): apt-get install \(package)"
        )
    }

    static func run(
        _ name: String,
        _ arguments: [String],
        package: String,
        environment: [String: String]? = nil,
        timeout: TimeInterval = 60
    ) throws -> Run {
        let folder = try Deploy.temporaryFolder("tool")
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("stdout")
        let err = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)

        let process = Process()
        process.executableURL = try locate(name, package: package)
        process.arguments = arguments
        var env = environment ?? ProcessInfo.processInfo.environment
        env["SYSTEMD_COLORS"] = "0"
        env["SYSTEMD_PAGER"] = "cat"
        env["LC_ALL"] = "C.UTF-8"
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        closeFileStreams(of: process)
        if done.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            _ = done.wait(timeout: .now() + 5)
            throw GateRunner.Failure("\(name) \(arguments) did not finish within \(Int(timeout)) s")
        }
        return Run(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? ""
        )
    }
}
