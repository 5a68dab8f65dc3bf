import Foundation
import GateTestSupport
import Testing

/// `gate doctor` under `[esp32] protocol = 2` against a real `esp32-sim --protocol 2` on
/// loopback: the `v2` check says which protocol it answers, from one signed status query,
/// and the relay never moves.
@Suite("gate doctor: protocol v2", .serialized)
struct DoctorV2Tests {
    let keyA: V2TestKey
    let keyB: V2TestKey

    init() throws {
        let vectors = try V2Vectors()
        keyA = try vectors.key("A", id: 1)
        keyB = try vectors.key("B", id: 2)
    }

    /// `gate doctor --json` for the simulator, with the key `key` as the credential esp32-key.
    private func doctor(_ sim: Simulator, key: V2TestKey?, protocolVersion: Int = 2) throws -> DoctorOutcome {
        let config = try TestConfig.udp(
            host: "127.0.0.1",
            port: sim.udpPort,
            extra: "[esp32]\nprotocol = \(protocolVersion)\nkey_id = 1\n"
        )
        let credentials = config.directory.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        if let key {
            try (key.hex + "\n").write(
                to: credentials.appendingPathComponent("esp32-key"),
                atomically: true,
                encoding: .utf8
            )
        }
        var environment = GateRunner.isolatedEnvironment()
        environment["CREDENTIALS_DIRECTORY"] = credentials.path
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        return try DoctorOutcome.run(config: config.path, environment: environment)
    }

    private func simulator(_ key: V2TestKey, _ extra: [String] = []) throws -> Simulator {
        try Simulator(["--protocol", "2"] + extra, environment: ["ESP32_SIM_KEY\(key.id)": key.hex])
    }

    @Test func aV2DeviceIsSaidAndNothingMoves() throws {
        let sim = try simulator(keyA)
        let doctor = try doctor(sim, key: keyA)
        #expect(doctor.run.status == 0, "\(doctor.run.summary)")
        #expect(doctor["v2"].status == "ok", "\(doctor["v2"])")
        #expect(doctor["v2"].detail.contains("answers protocol v2 to key 1"), "\(doctor["v2"].detail)")
        #expect(!doctor.run.stdout.contains(keyA.hex) && !doctor.run.stderr.contains(keyA.hex))
        #expect(try sim.activations().isEmpty, "the doctor never opens")
    }

    @Test func aDeviceStillAcceptingV1IsAWarningNotAFailure() throws {
        let sim = try simulator(keyA, ["--accept-v1"])
        let doctor = try doctor(sim, key: keyA)
        #expect(doctor.run.status == 0, "\(doctor.run.summary)")
        #expect(doctor["v2"].status == "warn" && doctor["v2"].detail.contains("still accepts v1"), "\(doctor["v2"])")
        #expect(try sim.activations().isEmpty)
    }

    @Test func anotherKeyOrNoKeyFails78() throws {
        let sim = try simulator(keyB)
        let wrong = try doctor(sim, key: keyA)
        #expect(wrong.run.status == 78, "\(wrong.run.summary)")
        #expect(wrong["v2"].status == "fail" && wrong["v2"].detail.contains("no signed answer"), "\(wrong["v2"])")
        let none = try doctor(sim, key: nil)
        #expect(none.run.status == 78)
        #expect(none["v2"].detail.hasPrefix("no ESP32 key found"), "\(none["v2"])")
        #expect(try sim.activations().isEmpty)
    }

    @Test func underProtocolOneNothingIsSentToTheDevice() throws {
        let esp32 = try DoctorQuietESP32()
        let config = try TestConfig.udp(host: "127.0.0.1", port: esp32.port)
        let doctor = try DoctorOutcome.run(config: config.path)
        #expect(doctor.run.status == 0, "\(doctor.run.summary)")
        #expect(doctor["v2"].status == "skip" && doctor["v2"].detail.contains("protocol = 1"))
        #expect(esp32.received() == 0)
    }
}
