import FoundationEssentials
import Testing

@testable import GateCore

@Suite("JSON: the writer, and the records read back through JSONDecoder")
struct JSONRecordTests {
    private func bytes(_ text: String) -> [UInt8] {
        Array(text.utf8)
    }

    @Test(
        "The writer copies what needs no escape as it is and escapes the rest",
        arguments: [
            ("relay cycle confirmed via mqtt in 401 ms", #""relay cycle confirmed via mqtt in 401 ms""#),
            ("", #""""#),
            // 0xE2 that is not U+2028/9
            ("caf\u{e9} \u{2192} \u{20ac} \u{1f600}", "\"caf\u{e9} \u{2192} \u{20ac} \u{1f600}\""),
            ("a\u{2028}b\u{2029}c", #""a\u2028b\u2029c""#),
            ("\u{2192}\u{2028}", "\"\u{2192}\\u2028\""),
            ("say \"hi\" \\ bye", #""say \"hi\" \\ bye""#),
            ("tab\there\u{7f}\u{1f}", #""tab\there\u007f\u001f""#),
        ]
    )
    func writerOutput(value: String, expected: String) throws {
        #expect(JSONValue.string(value).serialized() == expected)
        let object = JSONValue.object([(value, .string(value))]).serialized()
        #expect(object == "{\(expected):\(expected)}", "keys are written alike")
        let read = try JSONDecoder().decode([String: String].self, from: Data(object.utf8))
        #expect(read == [value: value], "what the writer escapes, JSONDecoder reads back")
    }

    @Test("Members keep the order they were written in")
    func order() {
        let value = JSONValue.object([("b", .int(1)), ("a", .object([("c", .array([.null, .bool(true)]))]))])
        #expect(value.serialized() == #"{"b":1,"a":{"c":[null,true]}}"#)
    }

    @Test(
        "Not JSON, or a member that is not an exact integer of its type, is no record",
        arguments: [
            "", " ", "nul", "{", "{\"pid\":1", "{pid:1}", "{\"pid\" 1}", "{} {}", "{} x", "'single'", "null", "[]",
            #"{"pid":1.5}"#, #"{"pid":01}"#, #"{"pid":+1}"#, #"{"pid":2147483648}"#, #"{"pid":"7"}"#,
            #"{"ended_monotonic_ns":-1}"#, #"{"ended_monotonic_ns":9223372036854775808}"#, #"{"source":"\ud83d"}"#,
            #"{"source":"\x41"}"#, #"{"source":"\u12"}"#, #"{"pid":true}"#,
        ]
    )
    func refused(text: String) {
        #expect(LockRecord(json: bytes(text)) == nil, "\(text) was accepted")
    }

    @Test("Invalid UTF-8 inside a string is no record")
    func invalidUTF8() {
        #expect(
            LockRecord(json: [0x7b, 0x22, 0x73, 0x6f, 0x75, 0x72, 0x63, 0x65, 0x22, 0x3a, 0x22, 0xC3, 0x28, 0x22, 0x7d])
                == nil
        )
        #expect(LockRecord(json: Array(#"{"source":""#.utf8) + [0xFF, 0x22, 0x7d]) == nil)
    }

    @Test("Deep nesting in a member nobody reads is refused, not recursed into without end")
    func depth() {
        #expect(LockRecord(json: bytes(#"{"x":"# + String(repeating: "[", count: 100_000))) == nil)
    }

    @Test("A status record reads back what was written, and ignores members it does not know")
    func statusRoundTrip() throws {
        let last = StatusRecord.Last(
            outcome: .timeout,
            error: "operationTimeout",
            adapter: "udp",
            durationMs: 2003,
            finishedAt: "2026-11-21T10:00:02.003Z",
            source: "button"
        )
        let record = StatusRecord(
            state: .timeout,
            since: "2026-11-21T10:00:02.003Z",
            source: "button",
            pid: 4321,
            adapter: "udp",
            resetAt: "2026-11-21T10:00:05.003Z",
            last: last
        )
        #expect(StatusRecord(json: bytes(record.json.serialized())) == record)
        let extra = bytes(#"{"state":"ready","since":"2026-11-21T10:00:00.000Z","future":[1,{"x":null}]}"#)
        #expect(StatusRecord(json: extra) == .initial(now: "2026-11-21T10:00:00.000Z"))
    }

    @Test(
        "A status record with a missing or mistyped member is no record",
        arguments: [
            #"{"since":"2026-11-21T10:00:00.000Z"}"#,
            #"{"state":"opening","since":"2026-11-21T10:00:00.000Z"}"#,
            #"{"state":"ready"}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","pid":"7"}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","pid":2147483648}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","last":{"outcome":"success"}}"#,
            #"{"state":"ready","since":"2026-11-21T10:00:00.000Z","last":7}"#,
            #"["ready"]"#,
        ]
    )
    func statusRefused(text: String) {
        #expect(StatusRecord(json: bytes(text)) == nil)
    }

    @Test("A lock record: every member optional, types checked, the monotonic instants unsigned")
    func lockRecord() {
        let record = LockRecord(
            pid: 42,
            source: "cli",
            since: "2026-11-21T10:00:00.000Z",
            endedMonotonicNs: 123_456_789_012,
            triggeredMonotonicNs: 9_223_372_036_854_775_807
        )
        #expect(LockRecord(json: bytes(record.json.serialized())) == record)
        #expect(LockRecord(json: bytes("{}")) == LockRecord(pid: nil, source: nil, since: nil, endedMonotonicNs: nil))
        #expect(
            LockRecord(json: bytes(#"{"pid":null,"source":null}"#))
                == LockRecord(pid: nil, source: nil, since: nil, endedMonotonicNs: nil)
        )
    }
}
