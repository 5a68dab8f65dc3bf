import GateControl
import GateCore
import GateDoctor
import Testing

private let alice = DoctorUser(name: "alice", uid: 1000)
private let file = "/home/alice/.config/gate/gate.toml"

@Suite("gate doctor: verdicts, exit status and output")
struct DoctorVerdictTests {
    @Test("Exit status: 0 with only ok and skip, 78 when every failure is configuration, else 69")
    func exitStatus() {
        let ok = DoctorFinding.ok(.config, "fine")
        let skip = DoctorFinding.skip(.gpio, "no [button]")
        let config = DoctorFinding.fail(.mqttPassword, .configuration, "none", fix: "gate secret set mqtt-password")
        let down = DoctorFinding.fail(.mqttTCP, .unavailable, "refused", fix: "start it")
        #expect(DoctorReport(findings: [ok, skip]).exitStatus == 0)
        #expect(DoctorReport(findings: [ok, config]).exitStatus == 78)
        #expect(DoctorReport(findings: [config, down, skip]).exitStatus == 69)
        #expect(DoctorReport(findings: [down, config]).exitStatus == 69)
    }

    @Test("Text: one line per check, the fix indented under a failure, continuation lines aligned")
    func text() {
        let report = DoctorReport(findings: [
            .ok(.config, "valid"),
            .fail(.udp, .unavailable, "off-link", fix: "check udp.host"),
            .fail(.mqttPassword, .configuration, "first\nsecond", fix: "store one"),
            .skip(.gpio, "no [button] table"),
        ])
        let lines = report.text.split(separator: "\n").map(String.init)
        #expect(lines[0].hasPrefix("ok    config "))
        #expect(lines[1].hasPrefix("FAIL  udp "))
        let column = lines[1].range(of: "off-link")!.lowerBound.utf16Offset(in: lines[1])
        #expect(lines[2] == String(repeating: " ", count: column) + "fix: check udp.host")
        #expect(lines[4] == String(repeating: " ", count: column) + "second")
        #expect(lines[6].hasPrefix("skip  gpio "))
        #expect(lines.last == "2 of 4 checks failed (1 ok, 1 skipped)")
    }

    @Test("JSON: an array of {check, status, detail, fix}, fix null unless failed")
    func json() {
        let report = DoctorReport(findings: [
            .ok(.config, "valid"),
            .fail(.mqttConnect, .unavailable, "TLS \"bad\"", fix: "check mqtt.ca_file"),
        ])
        #expect(
            report.json.serialized() == #"[{"check":"config","status":"ok","detail":"valid","fix":null},"#
                + #"{"check":"mqtt-connect","status":"fail","detail":"TLS \"bad\"","fix":"check mqtt.ca_file"}]"#
        )
    }

    @Test("An invalid configuration names each key, in the detail and in the fix")
    func invalidConfig() {
        let finding = DoctorVerdict.config(
            .invalid(
                path: file,
                problems: [
                    ConfigProblem(file: file, line: 3, key: "udp.port", message: "must be 1–65535"),
                    ConfigProblem(file: file, line: 7, key: "mqtt.hots", message: "unknown key (did you mean host?)"),
                ]
            )
        )
        #expect(finding.detail.contains("\(file):3: udp.port: must be 1–65535"))
        #expect(finding.fix?.contains("edit udp.port, mqtt.hots in \(file)") == true)
        #expect(DoctorReport(findings: [finding]).exitStatus == 78)
    }

    @Test("UDP: loopback and on-link pass; off-link fails and says what an opening then does")
    func udp() {
        let lan = IPAddress(literal: "192.168.1.50")!
        #expect(
            !DoctorVerdict.udp(
                .verdict(lan, .onLink(interface: "eth0")),
                host: "esp32.lan",
                file: file,
                mqttConfigured: true
            ).failed
        )
        #expect(
            !DoctorVerdict.udp(
                .verdict(IPAddress(literal: "::1")!, .loopback),
                host: "::1",
                file: file,
                mqttConfigured: false
            ).failed
        )
        let off = DoctorVerdict.udp(.verdict(lan, .offLink), host: "esp32.lan", file: file, mqttConfigured: true)
        #expect(off.detail.contains("esp32.lan (192.168.1.50) is not on a directly connected network"))
        #expect(off.detail.contains("use MQTT"))
        #expect(off.fix?.contains("udp.host in \(file)") == true)
        let alone = DoctorVerdict.udp(.verdict(lan, .offLink), host: "192.168.1.50", file: file, mqttConfigured: false)
        #expect(alone.detail.hasPrefix("192.168.1.50 is not"))
        #expect(alone.detail.contains("no [mqtt]"))
    }

    @Test("Runtime: a shared /run/gate this account cannot write fails with the usermod hint")
    func sharedUnwritable() {
        let personal = FolderFacts(path: "/run/user/1000/gate", origin: .personal, state: .writable)
        let finding = DoctorVerdict.runtime(personal, lock: .absent, sharedUnwritable: "/run/gate", user: alice)
        #expect(finding.failed)
        #expect(finding.fix?.hasPrefix("sudo usermod -aG gate alice") == true)
        #expect(!DoctorVerdict.runtime(personal, lock: .absent, sharedUnwritable: nil, user: alice).failed)
    }

    @Test("Runtime: folder and lock states")
    func runtimeStates() {
        let shared = FolderFacts(
            path: "/run/gate",
            origin: .shared,
            state: .notWritable(why: "access: Permission denied")
        )
        #expect(
            DoctorVerdict.runtime(shared, lock: .absent, sharedUnwritable: nil, user: alice).fix?.contains(
                "usermod -aG gate alice"
            ) == true
        )
        let makeable = FolderFacts(
            path: "/tmp/x/run",
            origin: .environment("GATE_RUNTIME_DIR"),
            state: .missing(ancestor: "/tmp", creatable: true)
        )
        #expect(!DoctorVerdict.runtime(makeable, lock: .absent, sharedUnwritable: nil, user: alice).failed)
        let stuck = FolderFacts(
            path: "/srv/run",
            origin: .environment("GATE_RUNTIME_DIR"),
            state: .missing(ancestor: "/srv", creatable: false)
        )
        #expect(
            DoctorVerdict.runtime(stuck, lock: .absent, sharedUnwritable: nil, user: alice).fix?.contains(
                "$GATE_RUNTIME_DIR"
            ) == true
        )
        let good = FolderFacts(path: "/run/gate", origin: .shared, state: .writable)
        let lock = DoctorVerdict.runtime(
            good,
            lock: .notUsable(path: "/run/gate/lock", why: "access: Permission denied"),
            sharedUnwritable: nil,
            user: alice
        )
        #expect(lock.fix == "sudo chgrp gate /run/gate/lock && sudo chmod 0660 /run/gate/lock")
        #expect(
            DoctorVerdict.runtime(good, lock: .usable(heldNow: true), sharedUnwritable: nil, user: alice).detail
                .contains("an opening holds it now")
        )
    }

    @Test("Password: found names the source, never more; missing and unusable are configuration failures")
    func password() {
        let found = DoctorVerdict.password(
            .found(source: "systemd credentials", location: "/run/credentials/gate.service/mqtt-password"),
            username: "gate"
        )
        #expect(!found.failed)
        #expect(found.detail.contains("systemd credentials"))
        let missing = DoctorVerdict.password(
            .missing(notes: ["systemd credentials: $CREDENTIALS_DIRECTORY is not set"]),
            username: "gate"
        )
        #expect(missing.fix?.contains("gate secret set mqtt-password") == true)
        #expect(missing.fix?.contains("systemd-creds encrypt") == true)
        #expect(DoctorReport(findings: [missing]).exitStatus == 78)
        #expect(
            DoctorReport(findings: [DoctorVerdict.password(.unusable(source: "x", why: "empty"), username: "gate")])
                .exitStatus == 78
        )
    }

    @Test("Broker: not authorised points at the password, or at mqtt.username when anonymous")
    func brokerRefusals() {
        let withUser = MQTTConfig(host: "127.0.0.1", username: "gate")
        let refused = DoctorVerdict.broker(
            .refused(code: 5, words: "Connection Refused: not authorised."),
            mqtt: withUser,
            file: file
        )
        #expect(refused.detail.contains("refused the login of user gate: Connection Refused: not authorised."))
        #expect(refused.fix?.contains("gate secret set mqtt-password") == true)
        let anonymous = DoctorVerdict.broker(
            .refused(code: 5, words: "not authorised"),
            mqtt: MQTTConfig(host: "127.0.0.1"),
            file: file
        )
        #expect(anonymous.fix?.contains("set mqtt.username in \(file)") == true)
        let unavailable = DoctorVerdict.broker(
            .refused(code: 3, words: "server unavailable"),
            mqtt: withUser,
            file: file
        )
        #expect(DoctorReport(findings: [unavailable]).exitStatus == 69)
    }

    @Test("Broker: TLS failure names TLS and the CA file; plaintext to a TLS port suggests mqtt.tls")
    func brokerTransport() {
        let tls = MQTTConfig(host: "broker.lan", tls: true, caFile: "/etc/gate/ca.pem")
        let failed = DoctorVerdict.broker(.tlsFailed("certificate verify failed"), mqtt: tls, file: file)
        #expect(failed.detail.hasPrefix("TLS handshake with the MQTT broker at broker.lan:8883 failed"))
        #expect(failed.fix?.contains("mqtt.ca_file (/etc/gate/ca.pem)") == true)
        let closed = DoctorVerdict.broker(
            .closed("Connection lost"),
            mqtt: MQTTConfig(host: "broker.lan", port: 8883),
            file: file
        )
        #expect(closed.fix?.contains("set mqtt.tls = true") == true)
        #expect(DoctorVerdict.endpoint(MQTTConfig(host: "::1", port: 1883)) == "[::1]:1883")
        let ok = DoctorVerdict.broker(.accepted(.milliseconds(12)), mqtt: tls, file: file)
        #expect(ok.detail.contains("nothing published"))
    }

    @Test("GPIO: a line the daemon holds is working; another holder, no chip or no permission fail with hints")
    func gpio() {
        let button = ButtonConfig(chip: "gpiochip0", line: 17)
        #expect(
            !DoctorVerdict.button(.busy(daemonPID: 812, words: "busy"), button: button, file: file, user: alice).failed
        )
        #expect(
            DoctorVerdict.button(.busy(daemonPID: 812, words: "busy"), button: button, file: file, user: alice).detail
                .contains("pid 812")
        )
        let other = DoctorVerdict.button(
            .busy(daemonPID: nil, words: "Device or resource busy"),
            button: button,
            file: file,
            user: alice
        )
        #expect(other.fix?.contains("gpioinfo gpiochip0") == true)
        let none = DoctorVerdict.button(
            .noChip(words: "cannot open GPIO chip gpiochip0", present: []),
            button: button,
            file: file,
            user: alice
        )
        #expect(none.fix?.contains("gpiochip0") == true)
        let wrong = DoctorVerdict.button(
            .noChip(words: "cannot open GPIO chip gpiochip9", present: ["gpiochip0", "gpiochip1"]),
            button: button,
            file: file,
            user: alice
        )
        #expect(wrong.fix?.contains("set button.chip in \(file) to one of gpiochip0, gpiochip1") == true)
        let denied = DoctorVerdict.button(
            .permissionDenied("Permission denied"),
            button: button,
            file: file,
            user: alice
        )
        #expect(denied.fix?.hasPrefix("sudo usermod -aG gpio alice") == true)
        #expect(denied.fix?.contains("99-gate-gpio.rules") == true)
    }

    @Test(
        "Daemon: the user's own, the system service, none, a stale socket, another configuration, an untrusted listener"
    )
    func daemon() {
        let socket = "/run/gate/control.sock"
        let system = ControlDaemon(pid: 812, uid: 998, configPath: "/etc/gate/gate.toml", runtimeDirectory: "/run/gate")
        let own = DoctorVerdict.daemon(
            .answered(
                ControlDaemon(pid: 4242, uid: 1000, configPath: file, runtimeDirectory: "/run/user/1000/gate"),
                peerUID: 1000,
                socket: socket
            ),
            user: alice,
            configPath: file
        )
        #expect(
            own.status == .ok
                && own.detail.hasPrefix("this user's own daemon (pid 4242) serves /run/user/1000/gate with \(file)"),
            "\(own.detail)"
        )
        let service = DoctorVerdict.daemon(
            .answered(system, peerUID: 998, socket: socket),
            user: alice,
            configPath: "/etc/gate/gate.toml"
        )
        #expect(
            service.status == .ok && service.detail.hasPrefix("the system service (pid 812, uid 998) serves /run/gate"),
            "\(service.detail)"
        )
        let elsewhere = DoctorVerdict.daemon(
            .answered(system, peerUID: 998, socket: socket),
            user: alice,
            configPath: file
        )
        #expect(
            elsewhere.status == .ok
                && elsewhere.detail.contains("this account reads \(file), so its openings are declined"),
            "\(elsewhere.detail)"
        )
        #expect(
            DoctorVerdict.daemon(.absent(socket: socket), user: alice, configPath: file).detail.contains(
                "openings connect by themselves"
            )
        )
        #expect(DoctorVerdict.daemon(.stale(socket: socket), user: alice, configPath: file).status == .ok)
        // Issue 28, item 2: a part that failed is said; one waiting to be started again fails the check.
        var restarting = system
        restarting.parts = [PartReport(part: "button", failures: 1, lastFailure: "EIO", restartIn: .seconds(1))]
        let failing = DoctorVerdict.daemon(
            .answered(restarting, peerUID: 998, socket: socket),
            user: alice,
            configPath: nil
        )
        #expect(failing.failed && failing.detail.contains("button failed (1 failure in a row): EIO"), "\(failing)")
        restarting.parts[0].restartIn = nil
        let recovered = DoctorVerdict.daemon(
            .answered(restarting, peerUID: 998, socket: socket),
            user: alice,
            configPath: nil
        )
        #expect(recovered.status == .ok && recovered.detail.contains("button restarted after 1 failure (last: EIO)"))
        let hostile = DoctorVerdict.daemon(
            .untrusted(pid: 77, uid: 1001, socket: socket),
            user: alice,
            configPath: file
        )
        #expect(hostile.failed && hostile.detail.contains("uid 1001 (pid 77)"), "\(hostile.detail)")
        #expect(DoctorReport(findings: [hostile]).exitStatus == 69)
    }

    @Test(
        "Notify: the server named with its version and vendor once; no bus, no server and a failed call each fail with their own fix"
    )
    func notify() {
        let file = "/home/alice/.config/gate/gate.toml"
        let dunst = DoctorVerdict.notify(.server(name: "dunst", vendor: "knopwob", version: "1.9.0"), file: file)
        #expect(!dunst.failed)
        #expect(dunst.detail.contains("the notification server dunst 1.9.0 (knopwob) answers"), "\(dunst.detail)")
        let plain = DoctorVerdict.notify(.server(name: "mako", vendor: "mako", version: ""), file: file)
        #expect(plain.detail.contains("the notification server mako answers"), "\(plain.detail)")

        let noBus = DoctorVerdict.notify(.noSessionBus, file: file)
        #expect(noBus.failed && noBus.detail.contains("[notify] is set in \(file)"), "\(noBus.detail)")
        #expect(noBus.fix?.contains("systemctl --user enable --now gate-user.service") == true)
        let noServer = DoctorVerdict.notify(.noServer, file: file)
        #expect(noServer.failed && noServer.detail.contains("org.freedesktop.Notifications"))
        #expect(noServer.fix?.contains("remove [notify] from \(file)") == true)
        let failed = DoctorVerdict.notify(.failed(why: "GetServerInformation: Timeout"), file: file)
        #expect(failed.failed && failed.detail.hasSuffix("cannot be asked: GetServerInformation: Timeout"))
        #expect(failed.fix?.contains("remove [notify] from \(file)") == true)
        #expect(DoctorReport(findings: [noBus, dunst]).exitStatus == 69)
    }
}
