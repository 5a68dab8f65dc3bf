import Foundation
import GateTestSupport
import Testing

/// A listener on the LAN (issue 30): four network namespaces of the test's own, joined by
/// a hub (a bridge that floods every frame, as a shared Wi-Fi medium shows every station's
/// frames): gate at 10.231.9.1, the ESP32 (`esp32-sim`) at 10.231.9.2, an attacker at
/// 10.231.9.3. The attacker captures every datagram gate sends to the ESP32 with tshark
/// and sends each one again, byte for byte. Under protocol v1 that opens the gate a second
/// time (the control that shows the capture and the replay reach the relay); under v2 the
/// ESP32 drops every copy. Nothing is added to the machine's own namespace.
@Suite("A LAN attacker replays what gate sent", .serialized)
struct LANAttackerTests {
    private static let esp32 = "10.231.9.2"

    private final class LAN {
        let namespaces = NamespaceSet()
        let gate: String
        let esp: String
        let attacker: String
        let simulator: NamespacedSimulator
        let folder: URL

        init(simulatorArguments: [String]) throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-lan-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            do {
                let hub = try namespaces.add("lan-hub")
                gate = try namespaces.add("lan-gate")
                esp = try namespaces.add("lan-esp")
                attacker = try namespaces.add("lan-atk")
                try namespaces.hub(in: hub)
                try namespaces.join(gate, "vg", "10.231.9.1/24", toHubIn: hub, port: "pg")
                try namespaces.join(esp, "ve", "\(LANAttackerTests.esp32)/24", toHubIn: hub, port: "pe")
                try namespaces.join(attacker, "va", "10.231.9.3/24", toHubIn: hub, port: "pa")
                simulator = try NamespacedSimulator(
                    namespace: esp,
                    udp: "\(LANAttackerTests.esp32):8080",
                    ["--hold-ms", "150"] + simulatorArguments
                )
            } catch {
                namespaces.tearDown()
                throw error
            }
        }

        func tearDown() {
            simulator.stop()
            namespaces.tearDown()
            try? FileManager.default.removeItem(at: folder)
        }

        /// tshark on the attacker's interface, printing the destination port and payload of
        /// every datagram from gate to the ESP32, one per line. Ready once a probe sent to
        /// the discard port shows in its output: "Capturing on" is printed before dumpcap
        /// has opened the interface, and a trigger sent in between is not captured (CI, stop
        /// 33: the activation at .310, "Capture started" at .313, 0 packets).
        func startCapture() throws -> NamespacedProcess {
            let capture = try NamespacedProcess(
                namespace: attacker,
                executable: "/usr/bin/tshark",
                arguments: [
                    "-i", "va", "-l", "-n", "-f", "udp and src host 10.231.9.1 and (dst port 8080 or dst port 9)",
                    "-d", "udp.port==8080,data", "-T", "fields", "-e", "udp.dstport", "-e", "data.data",
                ]
            )
            try capture.wait(for: "tshark capturing") { capture.stderrText.contains("Capturing on") }
            try capture.wait(for: "a probe datagram in tshark's output") {
                try? sendProbe()
                Thread.sleep(forTimeInterval: 0.1)
                return capture.stdoutText.split(separator: "\n").contains { $0 == "9" || $0.hasPrefix("9\t") }
            }
            return capture
        }

        /// One datagram from gate's namespace to the ESP32's discard port (nothing listens).
        private func sendProbe() throws {
            let script = """
                import socket
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"probe", ("\(LANAttackerTests.esp32)", 9))
                """
            _ = try MosquittoBroker.runTool(
                NetNS.ipTool,
                ["netns", "exec", gate, "python3", "-c", script],
                timeout: .seconds(5)
            )
        }

        /// `gate open --direct --json` from gate's namespace.
        func open(config: String, environment: [String: String]) throws -> GateRun {
            try ChaosGate.run(in: gate, ["open", "--direct", "--json", "--config", config], environment: environment)
        }

        /// Sends every captured payload `copies` times from the attacker's namespace.
        func replay(_ payloads: [String], copies: Int = 3) throws {
            let script = """
                import socket, sys
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                for _ in range(\(copies)):
                    for line in sys.argv[1:]:
                        s.sendto(bytes.fromhex(line), ("\(LANAttackerTests.esp32)", 8080))
                """
            let run = try MosquittoBroker.runTool(
                NetNS.ipTool,
                ["netns", "exec", attacker, "python3", "-c", script] + payloads,
                timeout: .seconds(10)
            )
            #expect(run.status == 0, "replay: \(run.stderr)")
        }
    }

    /// The captured payloads, once tshark has printed them (it is stopped first).
    private static func payloads(of capture: NamespacedProcess) -> [String] {
        Thread.sleep(forTimeInterval: 0.3)
        capture.stop()
        return capture.stdoutText.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 2, fields[0] == "8080" else { return nil }
            let payload = fields[1].trimmingCharacters(in: .whitespaces)
            return payload.isEmpty ? nil : payload
        }
    }

    private static func environment(credentials: URL? = nil) -> [String: String] {
        var environment = GateRunner.isolatedEnvironment()
        environment["CREDENTIALS_DIRECTORY"] = credentials?.path
        return environment
    }

    @Test("v1: a captured trigger sent again opens the gate again (why v2 exists)")
    func v1ReplayOpens() throws {
        try #require(NetNS.unavailableReason == nil, "\(NetNS.unavailableReason ?? "")")
        let lan = try LAN(simulatorArguments: [])
        defer { lan.tearDown() }
        let config = try TestConfig.udp(host: Self.esp32, port: 8080)
        let capture = try lan.startCapture()
        let run = try lan.open(config: config.path, environment: Self.environment())
        #expect(run.status == 0, "\(run.summary)")
        let payloads = Self.payloads(of: capture)
        #expect(payloads == ["01"], "captured: \(payloads)\n\(capture.stderrText)")
        try lan.replay(payloads, copies: 1)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(lan.simulator.activations().count == 2, "\(lan.simulator.activations())")
    }

    @Test("v2: every frame gate sent, captured and sent again, is dropped: one activation")
    func v2ReplayIsDropped() throws {
        try #require(NetNS.unavailableReason == nil, "\(NetNS.unavailableReason ?? "")")
        let key = try V2Vectors().key("A", id: 1)
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("gate-lan-key-\(UUID().uuidString)")
        try (key.hex + "\n").write(to: keyFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let lan = try LAN(simulatorArguments: ["--protocol", "2", "--key-file", "1=\(keyFile.path)"])
        defer { lan.tearDown() }
        let config = try TestConfig.udp(host: Self.esp32, port: 8080, extra: "[esp32]\nprotocol = 2\nkey_id = 1\n")
        let credentials = config.directory.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try (key.hex + "\n").write(
            to: credentials.appendingPathComponent("esp32-key"),
            atomically: true,
            encoding: .utf8
        )

        let capture = try lan.startCapture()
        let run = try lan.open(config: config.path, environment: Self.environment(credentials: credentials))
        #expect(run.status == 0, "\(run.summary)")
        let payloads = Self.payloads(of: capture)
        // The trigger frame is among them (a status query for the epoch may precede it).
        #expect(!payloads.isEmpty && payloads.allSatisfy { $0.count == 64 }, "captured: \(payloads)")
        #expect(lan.simulator.activations().count == 1, "\(lan.simulator.activations())")

        try lan.replay(payloads)
        // A frame with one bit changed (a forgery of the captured one) is dropped as well.
        let forged = payloads.map { String($0.dropLast(2)) + ($0.hasSuffix("00") ? "01" : "00") }
        try lan.replay(forged, copies: 1)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(lan.simulator.activations().count == 1, "\(lan.simulator.activations())")
    }
}
