import Testing

@testable import GateCore

@Suite("JSON reader: the lock record, the status file and history lines")
struct JSONValueParsingTests {
    private func parse(_ text: String) -> JSONValue? {
        JSONValue.parse(Array(text.utf8))
    }

    @Test("Values of every kind, with whitespace around and between them")
    func values() {
        #expect(parse(" null ")?.serialized() == "null")
        #expect(parse("true")?.serialized() == "true")
        #expect(parse("false")?.serialized() == "false")
        #expect(parse("-0")?.serialized() == "0")
        #expect(parse("9223372036854775807")?.serialized() == "9223372036854775807")
        #expect(parse("-9223372036854775808")?.serialized() == "-9223372036854775808")
        #expect(parse("\t[ 1 , [] , {} ,\"a\" ]\r\n")?.serialized() == #"[1,[],{},"a"]"#)
        #expect(
            parse(#"{ "b" : 1, "a" : { "c" : [ null ] } }"#)?.serialized() == #"{"b":1,"a":{"c":[null]}}"#,
            "members keep the order they were written in"
        )
    }

    @Test("String escapes, surrogate pairs and UTF-8 come back as written")
    func strings() {
        #expect(parse(#""\" \\ \/ \b \f \n \r \t""#) == .string("\" \\ / \u{8} \u{c} \n \r \t"))
        #expect(parse(#""\u00e9\u20AC\ud83d\ude00""#) == .string("é€😀"))
        #expect(parse("\"é€😀\"") == .string("é€😀"))
        let tricky = JSONValue.string("line\nbreak \"quoted\" \u{1} \u{2028} back\\slash")
        #expect(parse(tricky.serialized()) == tricky, "what the writer escapes, the reader reads back")
    }

    @Test(
        "The writer copies what needs no escape as it is and escapes the rest",
        arguments: [
            ("relay cycle confirmed via mqtt in 401 ms", #""relay cycle confirmed via mqtt in 401 ms""#),
            ("", #""""#),
            ("caf\u{e9} \u{2192} \u{20ac} \u{1f600}", "\"caf\u{e9} \u{2192} \u{20ac} \u{1f600}\""),  // 0xE2 that is not U+2028/9
            ("a\u{2028}b\u{2029}c", #""a\u2028b\u2029c""#),
            ("\u{2192}\u{2028}", "\"\u{2192}\\u2028\""),
            ("say \"hi\" \\ bye", #""say \"hi\" \\ bye""#),
            ("tab\there\u{7f}\u{1f}", #""tab\there\u007f\u001f""#),
        ]
    )
    func writerOutput(value: String, expected: String) {
        #expect(JSONValue.string(value).serialized() == expected)
        #expect(JSONValue.object([(value, .null)]).serialized() == "{\(expected):null}", "keys are written alike")
    }

    @Test(
        "Not JSON, or not JSON this reader accepts",
        arguments: [
            "", " ", "nul", "truex", "[1,]", "[1 2]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{\"a\":1", "[", "\"open",
            "01", "-", "+1", "1.5", "1e3", "2E-1", "9223372036854775808", "-9223372036854775809",
            "\"tab\tinside\"", "\"\\x\"", "\"\\u12\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"",
            "{} {}", "[] x", "'single'",
        ]
    )
    func refused(text: String) {
        #expect(parse(text) == nil, "\(text) was accepted")
    }

    @Test("Invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        #expect(JSONValue.parse([0x22, 0xC3, 0x28, 0x22]) == nil)
        #expect(JSONValue.parse([0x22, 0xFF, 0x22]) == nil)
    }

    @Test("Nesting deeper than 32 is refused, not recursed into")
    func depth() {
        #expect(parse(String(repeating: "[", count: 32) + String(repeating: "]", count: 32)) != nil)
        #expect(parse(String(repeating: "[", count: 33) + String(repeating: "]", count: 33)) == nil)
        #expect(parse(String(repeating: "[", count: 100_000)) == nil)
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
        let read = try #require(parse(record.json.serialized()).flatMap(StatusRecord.init(json:)))
        #expect(read == record)
        let extra = try #require(
            parse(#"{"state":"ready","since":"2026-11-21T10:00:00.000Z","future":[1,{"x":null}]}"#)
        )
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
    func statusRefused(text: String) throws {
        let value = try #require(parse(text))
        #expect(StatusRecord(json: value) == nil)
    }

    @Test("A lock record: every member optional, types checked, the monotonic end unsigned")
    func lockRecord() throws {
        let record = LockRecord(
            pid: 42,
            source: "cli",
            since: "2026-11-21T10:00:00.000Z",
            endedMonotonicNs: 123_456_789_012
        )
        #expect(parse(record.json.serialized()).flatMap(LockRecord.init(json:)) == record)
        #expect(
            parse("{}").flatMap(LockRecord.init(json:))
                == LockRecord(pid: nil, source: nil, since: nil, endedMonotonicNs: nil)
        )
        #expect(parse(#"{"ended_monotonic_ns":-1}"#).flatMap(LockRecord.init(json:)) == nil)
        #expect(parse(#"{"pid":true}"#).flatMap(LockRecord.init(json:)) == nil)
        #expect(parse("null").flatMap(LockRecord.init(json:)) == nil)
    }
}
