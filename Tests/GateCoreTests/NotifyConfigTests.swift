import Testing
@testable import GateCore

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

private let udp = "[udp]\nhost = \"10.0.0.2\"\n"

@Suite("Configuration: [notify] (SPEC §10)")
struct NotifyConfigTests {
    @Test func absentMeansOff() throws {
        #expect(try parse(udp).notify == nil)
    }

    @Test func theTableAloneTurnsItOnWithDefaults() throws {
        #expect(try parse(udp + "[notify]\n").notify == NotifyConfig(everyOpening: false, timeoutMilliseconds: 10_000))
    }

    @Test func everyKey() throws {
        let config = try parse(udp + "[notify]\nevery_opening = true\ntimeout_ms = 0\n")
        #expect(config.notify == NotifyConfig(everyOpening: true, timeoutMilliseconds: 0))
    }

    @Test func unknownKeyIsRefusedByName() {
        let found = problems(udp + "[notify]\nenabled = true\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "notify.enabled")
        #expect(found.first?.line == 4)
        #expect(found.first?.message.contains("`every_opening`") == true, "\(found)")
    }

    @Test func misspelledTableIsGuessed() {
        let found = problems(udp + "[notfy]\n")
        #expect(found.first?.message.contains("did you mean [notify]") == true, "\(found)")
    }

    @Test(arguments: ["-1", "3600001", "\"10s\"", "1.5"])
    func badTimeoutNamesTheKey(value: String) {
        let found = problems(udp + "[notify]\ntimeout_ms = \(value)\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.key == "notify.timeout_ms")
    }

    @Test func everyOpeningIsABoolean() {
        let found = problems(udp + "[notify]\nevery_opening = \"yes\"\n")
        #expect(found.first?.key == "notify.every_opening")
        #expect(found.first?.message.contains("boolean") == true, "\(found)")
    }

    @Test func problemsElsewhereStillCheckNotify() {
        // A file without [udp] or [mqtt] is refused, and its [notify] mistakes are said in the same run.
        let found = problems("[notify]\ntimeout_ms = -5\n")
        #expect(found.contains { $0.key == "notify.timeout_ms" }, "\(found)")
    }

    @Test func renderedReadsBackEqual() throws {
        let config = try parse(udp + "[notify]\nevery_opening = true\ntimeout_ms = 2500\n")
        let rendered = config.renderedTOML(source: "gate.toml")
        #expect(rendered.contains("[notify]\nevery_opening = true\ntimeout_ms = 2500\n"), "\(rendered)")
        #expect(try parse(rendered) == config)
    }

    @Test func addedAndRemovedOnReload() throws {
        let off = try parse(udp)
        let on = try parse(udp + "[notify]\n")
        #expect(on.changes(from: off) == [ConfigChange(key: "notify", kind: .added)])
        #expect(off.changes(from: on) == [ConfigChange(key: "notify", kind: .removed)])
        #expect(GateConfig.auditLine(on.changes(from: off)) == "configuration reloaded; changed: notify (added)")
    }
}
