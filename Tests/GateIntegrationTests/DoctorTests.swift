import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every check `gate doctor` prints, in order.
let doctorChecks = [
    "config", "runtime", "state", "daemon", "udp", "esp32", "v2", "mqtt-password", "mqtt-tcp", "mqtt-connect", "gpio",
    "homeassistant",
    "notify",
]

/// `gate doctor --json`, run and parsed; findings keyed by check.
struct DoctorOutcome {
    let run: GateRun
    let findings: [[String: Any]]

    init(_ run: GateRun) throws {
        self.run = run
        let text = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.contains("\n"),
            let array = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]]
        else {
            throw GateRunner.Failure("doctor --json did not print one JSON array:\n\(run.summary)")
        }
        findings = array
    }

    static func run(
        config: String?,
        environment: [String: String] = GateRunner.isolatedEnvironment()
    ) throws -> DoctorOutcome {
        let arguments = ["doctor", "--json"] + (config.map { ["--config", $0] } ?? [])
        return try DoctorOutcome(GateRunner.run(arguments, environment: environment, timeout: .seconds(60)))
    }

    subscript(check: String) -> (status: String, detail: String, fix: String?) {
        let finding = findings.first { $0["check"] as? String == check } ?? [:]
        return (
            finding["status"] as? String ?? "missing", finding["detail"] as? String ?? "", finding["fix"] as? String
        )
    }

    var statuses: [String: String] {
        Dictionary(
            uniqueKeysWithValues: findings.map { ($0["check"] as? String ?? "?", $0["status"] as? String ?? "?") }
        )
    }
}

/// A UDP socket on 127.0.0.1 standing in for the ESP32: the doctor must never send it anything.
final class DoctorQuietESP32 {
    let socket: LoopbackSocket
    var port: UInt16 { socket.port }

    init() throws {
        socket = try LoopbackSocket(.udp, nonBlocking: true)
    }

    /// Datagrams that arrived so far (none expected).
    func received() -> Int {
        socket.drain().count
    }
}

/// A documentation address (RFC 5737) that no interface of this machine has in its
/// subnet. Not simply 192.0.2.1: on the machine these tests were written on, eth0 is
/// 192.0.2.2/24 and 192.0.2.1 is its default gateway. Nothing is ever sent to it.
func doctorOffLinkAddress() -> String? {
    var subnets: [(address: UInt32, mask: UInt32)] = []
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return nil }
    defer { freeifaddrs(list) }
    var cursor = list
    while let entry = cursor {
        cursor = entry.pointee.ifa_next
        guard let address = entry.pointee.ifa_addr, let mask = entry.pointee.ifa_netmask,
            Int32(address.pointee.sa_family) == AF_INET
        else { continue }
        let value = { (pointer: UnsafeMutablePointer<sockaddr>) in
            pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
            }
        }
        subnets.append((value(address), value(mask)))
    }
    for candidate in ["198.51.100.1", "203.0.113.1", "192.0.2.1"] {
        let value = UInt32(bigEndian: inet_addr(candidate))
        if !subnets.contains(where: { $0.address & $0.mask == value & $0.mask }) { return candidate }
    }
    return nil
}

@Suite("gate doctor: configuration, folders, UDP, GPIO", .serialized)
struct DoctorTests {
    @Test("No configuration anywhere: config FAIL with how to make one, exit 78, the rest skipped")
    func noConfig() throws {
        try #require(
            !FileManager.default.fileExists(atPath: "/etc/gate/gate.toml"),
            "this machine has /etc/gate/gate.toml"
        )
        let doctor = try DoctorOutcome.run(config: nil)
        #expect(doctor.run.status == 78, "\(doctor.run.summary)")
        #expect(doctor["config"].status == "fail")
        #expect(doctor["config"].detail.contains("no configuration file found"))
        #expect(doctor["config"].fix?.contains("--config") == true)
        #expect(doctor["udp"].status == "skip" && doctor["gpio"].status == "skip")
        #expect(doctor["runtime"].status == "ok", "the folders need no configuration")
    }

    @Test("Invalid configuration: config FAIL naming every key, exit 78")
    func invalidConfig() throws {
        let config = try TestConfig("[udp]\nhost = \"127.0.0.1\"\nport = 99999\n[mqtt]\nhots = \"127.0.0.1\"\n")
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 78, "\(doctor.run.summary)")
        let finding = doctor["config"]
        #expect(finding.status == "fail")
        #expect(finding.detail.contains("udp.port") && finding.detail.contains("mqtt.hots"), "\(finding.detail)")
        #expect(
            finding.fix?.contains("udp.port") == true && finding.fix?.contains(config.path) == true,
            "\(finding.fix ?? "")"
        )
    }

    @Test("ESP32 on loopback, no MQTT, no button: exit 0, and not one datagram reached the ESP32")
    func udpLoopback() throws {
        let esp32 = try DoctorQuietESP32()
        let config = try TestConfig.udp(host: "127.0.0.1", port: esp32.port)
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 0, "\(doctor.run.summary)")
        #expect(doctor["udp"].status == "ok")
        #expect(doctor["udp"].detail.contains("loopback"))
        #expect(doctor["mqtt-tcp"].status == "skip" && doctor["gpio"].status == "skip")
        #expect(esp32.received() == 0)
    }

    @Test("ESP32 off-link (a TEST-NET address): udp FAIL with the hint, exit 69")
    func udpOffLink() throws {
        let host = try #require(doctorOffLinkAddress(), "every TEST-NET address is on-link here")
        let config = try TestConfig.udp(host: host, port: 8080)
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 69, "\(doctor.run.summary)")
        #expect(doctor["udp"].status == "fail")
        #expect(
            doctor["udp"].detail.contains("\(host) is not on a directly connected network"),
            "\(doctor["udp"].detail)"
        )
        #expect(doctor["udp"].fix?.contains("udp.host in \(config.path)") == true)
    }

    @Test("[button] on a machine without GPIO chips: gpio FAIL naming the chip, exit 69")
    func gpioMissing() throws {
        let chips =
            (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.filter { $0.hasPrefix("gpiochip") } ?? []
        try #require(chips.isEmpty, "this machine has GPIO chips: \(chips)")
        let config = try TestConfig("[udp]\nhost = \"127.0.0.1\"\n[button]\nchip = \"gpiochip0\"\nline = 17\n")
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 69, "\(doctor.run.summary)")
        let gpio = doctor["gpio"]
        #expect(gpio.status == "fail")
        #expect(gpio.detail.contains("cannot open GPIO chip gpiochip0"), "\(gpio.detail)")
        #expect(gpio.fix?.contains("gpiochip0") == true && gpio.fix?.contains("[button]") == true, "\(gpio.fix ?? "")")
    }

    @Test("Text output: a line per check, FAIL with an indented fix, a tally, the same exit status")
    func textOutput() throws {
        let config = try TestConfig.udp(host: try #require(doctorOffLinkAddress()), port: 8080)
        let run = try GateRunner.run(["doctor", "--config", config.path])
        #expect(run.status == 69, "\(run.summary)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        for check in doctorChecks {
            #expect(
                lines.contains { $0.range(of: #"^(ok  |FAIL|skip)  \#(check) "#, options: .regularExpression) != nil },
                "\(check):\n\(run.stdout)"
            )
        }
        let failure = try #require(lines.firstIndex { $0.hasPrefix("FAIL  udp ") })
        #expect(lines[failure + 1].trimmingCharacters(in: .whitespaces).hasPrefix("fix: "))
        #expect(lines[failure + 1].hasPrefix("      "))
        #expect(lines.last?.hasPrefix("1 of 13 checks failed") == true, "\(run.stdout)")
    }

    @Test("No runtime folder can be chosen: runtime FAIL with the deploy-files hint, the state folder still checked")
    func noRuntimeFolder() throws {
        try #require(!FileManager.default.fileExists(atPath: "/run/gate"), "this machine has /run/gate")
        var environment = GateRunner.isolatedEnvironment()
        environment["GATE_RUNTIME_DIR"] = nil
        let config = try TestConfig.udp(host: "127.0.0.1", port: 8080)
        let doctor = try DoctorOutcome.run(config: config.path, environment: environment)
        #expect(doctor.run.status == 69, "\(doctor.run.summary)")
        #expect(doctor["runtime"].status == "fail")
        #expect(doctor["runtime"].detail.hasPrefix("no runtime folder"), "\(doctor["runtime"].detail)")
        #expect(doctor["runtime"].fix?.contains("$GATE_RUNTIME_DIR") == true)
        #expect(doctor["state"].status == "ok", "\(doctor.run.summary)")
    }

    @Test(
        "Runtime folder not writable for the account (as nobody): runtime FAIL, exit 69",
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root to drop to nobody with setpriv: as root, access(2) says every folder is writable"
        )
    )
    func runtimeNotWritable() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("gate-doctor-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let readOnly = scratch.appendingPathComponent("run")
        try FileManager.default.createDirectory(
            at: readOnly,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o555]
        )
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: scratch.path)
        let config = try TestConfig.udp(host: "127.0.0.1", port: 8080)
        // A state folder nobody can make (its nearest existing parent is /tmp): only the runtime check fails.
        let state = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-doctor-state-\(UUID().uuidString)"
        ).path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let doctor = try Self.asNobody(config: config.path, runtime: readOnly.path, state: state)
        #expect(doctor.run.status == 69, "\(doctor.run.summary)")
        #expect(doctor["runtime"].status == "fail")
        #expect(
            doctor["runtime"].detail.contains("\(readOnly.path) is not writable for nobody"),
            "\(doctor["runtime"].detail)"
        )
        #expect(doctor["runtime"].fix?.contains("$GATE_RUNTIME_DIR") == true)
        #expect(
            doctor["config"].status == "ok" && doctor["udp"].status == "ok" && doctor["state"].status == "ok",
            "\(doctor.run.summary)"
        )

        // A writable folder whose lock file this account cannot open.
        let shared = scratch.appendingPathComponent("shared")
        try FileManager.default.createDirectory(
            at: shared,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o777]
        )
        _ = FileManager.default.createFile(
            atPath: shared.appendingPathComponent("lock").path,
            contents: nil,
            attributes: [.posixPermissions: 0o600]
        )
        let locked = try Self.asNobody(config: config.path, runtime: shared.path, state: state)
        #expect(locked.run.status == 69, "\(locked.run.summary)")
        #expect(
            locked["runtime"].detail.contains("the lock \(shared.path)/lock cannot be opened"),
            "\(locked["runtime"].detail)"
        )
    }

    /// `gate doctor --json` as uid/gid 65534 with no supplementary groups, in a clean environment.
    private static func asNobody(config: String, runtime: String, state: String) throws -> DoctorOutcome {
        let gate = try GateRunner.binary().path
        let run = try MosquittoBroker.runTool(
            "/usr/bin/env",
            [
                "-i", "HOME=/nonexistent", "PATH=/usr/bin:/bin", "GATE_RUNTIME_DIR=\(runtime)",
                "GATE_STATE_DIR=\(state)",
                "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                gate, "doctor", "--json", "--config", config,
            ],
            timeout: .seconds(60)
        )
        return try DoctorOutcome(GateRun(status: run.status, stdout: run.stdout, stderr: run.stderr, wall: .zero))
    }
}
