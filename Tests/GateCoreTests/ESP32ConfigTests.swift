import Testing

@testable import GateCore

/// `[esp32]` (docs/CONTRACT.md#configuration): the protocol gate speaks with the ESP32 and
/// the key id it signs v2 frames with. v1 stays the default.
@Suite("Configuration: [esp32]")
struct ESP32ConfigTests {
    private let udp = "[udp]\nhost = \"10.0.0.2\"\n"

    private func parse(_ text: String) throws -> GateConfig {
        try GateConfig.parse(toml: text, file: "gate.toml")
    }

    private func problems(_ text: String) -> [ConfigProblem] {
        do throws(ConfigError) {
            _ = try GateConfig.parse(toml: text, file: "gate.toml")
            return []
        } catch {
            return error.problems
        }
    }

    @Test func withoutTheTableGateSpeaksV1WithKeyOne() throws {
        let config = try parse(udp)
        #expect(config.esp32 == ESP32Config())
        #expect(config.esp32.protocolVersion == .v1)
        #expect(config.esp32.keyID == 1)
    }

    @Test func protocolTwoAndAKeyIDAreRead() throws {
        let config = try parse(udp + "[esp32]\nprotocol = 2\nkey_id = 255\n")
        #expect(config.esp32 == ESP32Config(protocolVersion: .v2, keyID: 255))
        #expect(try parse(udp + "[esp32]\nprotocol = 1\n").esp32 == ESP32Config(protocolVersion: .v1, keyID: 1))
        #expect(try parse("esp32.key_id = 7\n" + udp).esp32.keyID == 7)
    }

    @Test(arguments: [
        ("protocol = 3", "gate.toml:4: esp32.protocol: 3 is out of range (1–2: 1 is the plain 0x01, 2 signed frames)"),
        ("protocol = 0", "gate.toml:4: esp32.protocol: 0 is out of range (1–2: 1 is the plain 0x01, 2 signed frames)"),
        ("protocol = \"2\"", "gate.toml:4: esp32.protocol: expected an integer, got a string"),
        ("key_id = 0", "gate.toml:4: esp32.key_id: 0 is out of range (1–255)"),
        ("key_id = 256", "gate.toml:4: esp32.key_id: 256 is out of range (1–255)"),
        ("key_id = 1.0", "gate.toml:4: esp32.key_id: expected an integer, got a float"),
    ])
    func badValuesNameTheFileLineAndKey(line: String, expected: String) {
        let found = problems(udp + "[esp32]\n" + line + "\n")
        #expect(found.map(\.description) == [expected])
    }

    @Test func theKeyNeverLivesInTheFile() {
        let digits = String(repeating: "ab", count: 32)
        let found = problems(udp + "[esp32]\nprotocol = 2\nkey = \"\(digits)\"\n")
        #expect(found.count == 1)
        let problem = found.first
        #expect(problem?.line == 5 && problem?.key == "esp32.key")
        #expect(problem?.message.contains("gate key new") == true, "\(found)")
        #expect(problem?.message.contains("esp32-key") == true)
        #expect(problem?.description.contains(digits) == false, "the key is never echoed")
    }

    @Test func anUnknownKeyIsSuggested() {
        let found = problems(udp + "[esp32]\nkeyid = 2\n")
        #expect(found.map(\.message) == ["unknown key in [esp32]; did you mean `key_id`?"])
    }

    @Test func aTypoOfTheTableIsSuggested() {
        let found = problems(udp + "[esp23]\nprotocol = 2\n")
        #expect(found.first?.message == "unknown table [esp23]; did you mean [esp32]?")
    }

    @Test func renderingWritesTheTableOutAndReadsBack() throws {
        let v1 = try parse(udp)
        let text = v1.renderedTOML(source: "test")
        #expect(text.contains("\n[esp32]\nprotocol = 1\nkey_id = 1\n"), "\(text)")
        #expect(try GateConfig.parse(toml: text, file: "rendered") == v1)

        let v2 = try parse(udp + "[esp32]\nprotocol = 2\nkey_id = 9\n")
        let shown = v2.renderedTOML(source: "test")
        #expect(shown.contains("protocol = 2\n") && shown.contains("key_id = 9\n"))
        #expect(shown.contains("esp32-key"), "says where the key comes from")
        #expect(try GateConfig.parse(toml: shown, file: "rendered") == v2)
    }

    @Test func reloadsNameTheKeysThatChanged() throws {
        let old = try parse(udp)
        var new = old
        new.esp32.protocolVersion = .v2
        #expect(new.changes(from: old) == [ConfigChange(key: "esp32.protocol", kind: .changed)])
        new.esp32.keyID = 4
        #expect(new.changes(from: old).map(\.key) == ["esp32.protocol", "esp32.key_id"])
    }

    @Test func theStarterFileShowsTheTableCommentedOut() throws {
        let text = StarterConfig.text(udpHost: nil, mqttHost: nil)
        #expect(text.contains("#[esp32]\n#protocol = 1\n#key_id = 1\n"), "\(text)")
        #expect(try GateConfig.parse(toml: text, file: "starter").esp32 == ESP32Config())
    }
}
