import FoundationEssentials
import Testing

@testable import GateCore

/// The fields of the shared files (docs/CONTRACT.md#runtime-files) are validated when read and escaped when shown.
@Suite("Shared files: times, labels, escapes, the history's tail")
struct SharedFileFieldsTests {
    @Test(
        "Timestamps: what gate writes reads back; other forms, impossible dates and years beyond Int64 nanoseconds are invalid"
    )
    func wallTime() {
        #expect(WallTime.nanoseconds(fromISO8601: "1970-01-01T00:00:00.000Z") == 0)
        #expect(WallTime.nanoseconds(fromISO8601: "2026-11-21T10:00:00.123Z") == 1_795_255_200_123_000_000)
        #expect(WallTime.nanoseconds(fromISO8601: "2024-02-29T23:59:59.999Z") != nil)
        #expect(WallTime.nanoseconds(fromISO8601: "2261-12-31T23:59:59.999Z") != nil)
        for invalid in [
            "2300-01-01T00:00:03.000Z", "9999-12-31T23:59:59.999Z", "2262-04-12T00:00:00.000Z",
            "1969-12-31T23:59:59.999Z",
            "2026-02-30T00:00:00.000Z", "2025-02-29T00:00:00.000Z", "2026-13-01T00:00:00.000Z",
            "2026-11-21T24:00:00.000Z",
            "2026-11-21T10:00:60.000Z", "2026-11-21T10:00:00Z", "2026-11-21T10:00:00.123+01:00",
            "2026-11-21T10:00:00.123Z ",
            "", "2026-11-21 10:00:00.123Z", "２026-11-21T10:00:00.123Z", "-026-11-21T10:00:00.123Z",
        ] {
            #expect(WallTime.nanoseconds(fromISO8601: invalid) == nil, "\(invalid)")
        }
    }

    @Test("Escaping: C0, DEL, C1 and invisible format characters are written out, backslashes doubled, the rest kept")
    func escaping() {
        #expect(SafeText.escaped("cli") == "cli")
        #expect(SafeText.escaped("caf\u{e9} \u{2192} \u{1f600}") == "caf\u{e9} \u{2192} \u{1f600}")
        #expect(SafeText.escaped("\u{1b}]0;pwned\u{7}") == #"\x1b]0;pwned\x07"#)
        #expect(SafeText.escaped("a\rb\nc\td") == #"a\rb\nc\td"#)
        #expect(SafeText.escaped("a\u{9b}31m\u{7f}") == #"a\u{9b}31m\x7f"#)
        #expect(SafeText.escaped("abc\u{202e}def\u{2028}\u{200b}") == #"abc\u{202e}def\u{2028}\u{200b}"#)
        #expect(SafeText.escaped(#"back\slash"#) == #"back\\slash"#)
        for scalar in (0..<0x20).map({ Unicode.Scalar(UInt8($0)) }) + (0x7f...0x9f).compactMap(Unicode.Scalar.init) {
            #expect(
                SafeText.escaped("x\(scalar)y").unicodeScalars.allSatisfy {
                    $0.value >= 0x20 && $0.value != 0x7f && !(0x80...0x9f).contains($0.value)
                }
            )
        }
    }

    @Test("Labels: 1 to 64 printable ASCII characters without spaces")
    func labels() {
        for valid in ["cli", "button", "operationTimeout", "a", String(repeating: "x", count: 64)] {
            #expect(SafeText.isLabel(valid), "\(valid)")
        }
        for invalid in [
            "", " ", "two words", "\u{1b}[2J", "caf\u{e9}", "a\u{9b}b", String(repeating: "x", count: 65), "tab\t",
        ] {
            #expect(!SafeText.isLabel(invalid), "\(invalid.debugDescription)")
        }
    }

    @Test("The JSON writer escapes C1 and invisible format characters too, and they read back")
    func jsonWriter() throws {
        let value = "a\u{9b}b\u{202e}c\u{e0001}d\u{e9}"
        let text = JSONValue.string(value).serialized()
        #expect(text == #""a\u009bb\u202ec\udb40\udc01d"# + "\u{e9}\"")
        #expect(try JSONDecoder().decode([String].self, from: Data("[\(text)]".utf8)) == [value])
    }

    @Test(
        "A status record whose members are not what gate writes is no record",
        arguments: [
            #"{"state":"timeout","since":"2026-11-21T10:00:00.000Z","reset_at":"2300-01-01T00:00:00.000Z"}"#,
            #"{"state":"ready","since":"2300-01-01T00:00:00.000Z"}"#,
            #"{"state":"ready","since":"yesterday"}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","source":"\u001b]0;x\u0007"}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","adapter":"a\u009bb"}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","pid":-1}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","last":{"outcome":"success","finished_at":"2026-11-21T10:00:00.000Z","source":"cli","duration_ms":-5}}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","last":{"outcome":"success","finished_at":"2026-11-21T10:00:00.000Z","source":"cli","duration_ms":9223372036854775807}}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","last":{"outcome":"success","finished_at":"2026-11-21T10:00:00.000Z","source":"cli\r\n"}}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","last":{"outcome":"error","error":"x\u202ey","finished_at":"2026-11-21T10:00:00.000Z","source":"cli"}}"#,
        ]
    )
    func hostileStatus(text: String) throws {
        #expect(StatusRecord(json: Array(text.utf8)) == nil)
    }

    @Test("A lock record drops a hostile holder description but keeps the cooldown's instants")
    func hostileLockRecord() throws {
        let text =
            #"{"pid":-3,"source":"\u001b]0;pwned\u0007","since":"2300-01-01T00:00:00.000Z","ended_monotonic_ns":5}"#
        let record = try #require(LockRecord(json: Array(text.utf8)))
        #expect(record == LockRecord(pid: nil, source: nil, since: nil, endedMonotonicNs: 5))
        #expect(record.holderDescription == "another process")
        let escaped = LockRecord(pid: 1, source: "a\u{1b}b", since: nil, endedMonotonicNs: nil).holderDescription
        #expect(escaped == #"pid 1 (a\x1bb)"#)
    }

    @Test("History entries: valid lines only")
    func historyEntries() {
        func line(source: String = "cli", at: String = "2026-11-21T10:00:00.000Z", duration: String = "412") -> [UInt8]
        {
            Array(
                #"{"at":"\#(at)","source":"\#(source)","uid":1000,"adapter":"udp","outcome":"success","error":null,"duration_ms":\#(duration)}"#
                    .utf8
            )
        }
        #expect(
            HistoryEntry(line: line())
                == HistoryEntry(
                    at: "2026-11-21T10:00:00.000Z",
                    source: "cli",
                    uid: 1000,
                    adapter: "udp",
                    outcome: "success",
                    error: nil,
                    durationMs: 412
                )
        )
        #expect(HistoryEntry(line: line(source: #"\u001b[2J"#)) == nil)
        #expect(HistoryEntry(line: line(source: String(repeating: "x", count: 65))) == nil)
        #expect(HistoryEntry(line: line(at: "2300-01-01T00:00:00.000Z")) == nil)
        #expect(HistoryEntry(line: line(duration: "-1")) == nil)
        #expect(HistoryEntry(line: Array(" ".utf8) + line()) == nil, "a line starts with its object")
        #expect(HistoryEntry(line: line() + Array(repeating: 0x20, count: 1024)) == nil, "longer than any entry")
    }

    @Test(
        "The history's tail: the same entries whatever the chunk size; junk, long lines and a missing last newline skipped"
    )
    func historyTail() {
        func entry(_ source: String) -> String {
            #"{"at":"2026-11-21T10:00:00.000Z","source":"\#(source)","uid":1,"adapter":"udp","outcome":"success","error":null,"duration_ms":5}"#
        }
        let text = [
            entry("one"), "junk", String(repeating: "y", count: 5000), entry("two"), "", entry("three"), "{\"half\":",
        ]
        .joined(separator: "\n")
        let bytes = Array(text.utf8)
        func tail(limit: Int, chunk: Int, budget: Int = .max) -> HistoryTail {
            var tail = HistoryTail(limit: limit, byteBudget: budget)
            var end = bytes.count
            while end > 0, !tail.isSatisfied {
                let start = max(0, end - chunk)
                tail.feed(bytes[start..<end], atStart: start == 0)
                end = start
            }
            return tail
        }
        for chunk in [1, 2, 7, 100, 1023, 1024, 4096, 100_000] {
            #expect(tail(limit: 10, chunk: chunk).entries.map(\.source) == ["one", "two", "three"], "chunk \(chunk)")
            #expect(tail(limit: 2, chunk: chunk).entries.map(\.source) == ["two", "three"], "chunk \(chunk)")
        }
        let lineBytes = entry("three").utf8.count + 1
        let trimmed = tail(limit: .max, chunk: 64, budget: 2 * lineBytes)
        #expect(trimmed.entries.map(\.source) == ["two", "three"])
        #expect(trimmed.text == Array((entry("two") + "\n" + entry("three") + "\n").utf8))
        #expect(HistoryTail(limit: 0).isSatisfied)
    }
}
