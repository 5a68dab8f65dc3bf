import GateCore
import GateDoctor
import Testing

/// `gate doctor`'s `v2` check: which protocol the ESP32 answers a signed status query in.
@Suite("Doctor: protocol v2")
struct DoctorV2VerdictTests {
    let file = "/etc/gate/gate.toml"

    @Test func a92PassesAndSaysV1IsRefused() {
        let finding = DoctorVerdict.v2(
            .answered(V2DeviceStatus(epoch: 0x0bad_cafe, acceptsV1: false), target: "192.168.1.50:8080"),
            keyID: 2,
            file: file
        )
        #expect(finding.status == .ok)
        #expect(finding.detail.contains("192.168.1.50:8080 answers protocol v2 to key 2"), "\(finding.detail)")
        #expect(finding.detail.contains("epoch badcafe") && finding.detail.contains("refuses v1"))
    }

    @Test func a94WarnsWithoutFailingAndSaysWhatToTurnOff() {
        let finding = DoctorVerdict.v2(
            .answered(V2DeviceStatus(epoch: 7, acceptsV1: true), target: "192.168.1.50:8080"),
            keyID: 1,
            file: file
        )
        #expect(finding.status == .warn && !finding.failed && finding.fix == nil)
        #expect(finding.detail.contains("still accepts v1 openings") && finding.detail.contains("migration"))
        let report = DoctorReport(findings: [.ok(.config, "valid"), finding, .skip(.gpio, "no [button] table")])
        #expect(report.exitStatus == 0)
        let lines = report.text.split(separator: "\n").map(String.init)
        #expect(lines[1].hasPrefix("WARN  v2 "), "\(lines)")
        #expect(lines.last == "no check failed (1 ok, 1 warning, 1 skipped)")
        #expect(report.json.serialized().contains(#""status":"warn""#))
    }

    @Test func silenceFailsWithTheKeyToGiveTheFirmware() {
        let finding = DoctorVerdict.v2(
            .silent(ignored: 1, budget: .seconds(2), target: "192.168.1.50:8080"),
            keyID: 3,
            file: file
        )
        guard case .fail(.configuration, let fix) = finding.status else {
            Issue.record("\(finding)")
            return
        }
        #expect(finding.detail.contains("no signed answer from 192.168.1.50:8080"), "\(finding.detail)")
        #expect(finding.detail.contains("(1 other datagram ignored)") && finding.detail.contains("v1 firmware"))
        #expect(fix.contains("gate key new") && fix.contains("as key 3") && fix.contains(file))
    }

    @Test func noKeyAndNoNetworkFailEachTheirWay() {
        let noKey = DoctorVerdict.v2(.noKey("no ESP32 key found: …"), keyID: 1, file: file)
        #expect(noKey.status == .fail(.configuration, fix: noKey.fix ?? ""))
        #expect(noKey.detail == "no ESP32 key found: …" && noKey.fix?.contains("gate key new") == true)
        let gone = DoctorVerdict.v2(.unreachable("nothing listens at 10.0.0.2:8080"), keyID: 1, file: file)
        #expect(gone.status == .fail(.unavailable, fix: gone.fix ?? ""))
        #expect(gone.detail.contains("nothing listens"))
    }
}
