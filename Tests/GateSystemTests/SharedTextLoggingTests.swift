import GateCore
import Testing

@testable import GateSystem

/// Log lines carry text from the shared files (docs/CONTRACT.md#runtime-files, #logging): nothing in a value may end
/// the line, forge another one, or reach the terminal as a control sequence.
@Suite("Log values and wall-clock times from shared files")
struct SharedTextLoggingTests {
    @Test(
        "The log quoter escapes CR, LF, ESC, DEL and C1, and quotes what it escapes",
        arguments: [
            ("plain", "plain"),
            ("", #""""#),
            ("two words", #""two words""#),
            ("a\rb", #""a\rb""#),
            ("a\nb", #""a\nb""#),
            ("x\u{1b}]0;pwned\u{7}", #""x\x1b]0;pwned\x07""#),
            ("a\u{9b}2J", #""a\u{9b}2J""#),
            ("del\u{7f}", #""del\x7f""#),
            ("say \"hi\"", #""say \"hi\"""#),
            (#"back\slash"#, #""back\\slash""#),
        ]
    )
    func quoting(value: String, quoted: String) {
        #expect(GateLogLine.quoted(value) == quoted)
    }

    @Test("Wall-clock times beyond Int64 nanoseconds are invalid, never a trap")
    func wallClock() {
        #expect(WallClock.nanoseconds(fromISO8601: "2300-01-01T00:00:03.000Z") == nil)
        #expect(WallClock.duration(until: "2300-01-01T00:00:03.000Z") == nil)
        #expect(WallClock.duration(until: "1970-01-01T00:00:00.000Z") == .zero)
        let soon = WallClock.iso8601(nanoseconds: WallClock.nowNanoseconds() + 60_000_000_000)
        #expect((WallClock.duration(until: soon) ?? .zero) > .seconds(58))
        #expect(
            WallClock.nanoseconds(fromISO8601: WallClock.iso8601(nanoseconds: 1_795_255_200_123_000_000))
                == 1_795_255_200_123_000_000
        )
    }
}
