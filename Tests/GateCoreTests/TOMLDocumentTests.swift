import Testing

@testable import GateCore

/// The value at `path`, or nil; the tests below compare whole values.
private func value(_ document: TOMLDocument, _ path: [String]) -> TOMLValue? {
    document.entries.first { $0.path == path }?.value
}

/// The syntax error `text` raises, or nil when it parses.
private func syntaxError(_ text: String) -> TOMLSyntaxError? {
    do throws(TOMLSyntaxError) {
        _ = try TOMLDocument(parsing: text)
        return nil
    } catch {
        return error
    }
}

@Suite("TOML document")
struct TOMLDocumentTests {
    @Test func tablesKeysAndLines() throws {
        let document = try TOMLDocument(
            parsing: """
                # a comment

                [udp]
                host = "192.168.1.50"   # trailing comment
                port = 8080
                [ "mqtt" ]
                'tls' = true
                """
        )
        #expect(
            document.tables == [
                TOMLDocument.Table(path: ["udp"], line: 3),
                TOMLDocument.Table(path: ["mqtt"], line: 6),
            ]
        )
        #expect(document.entries.map(\.line) == [4, 5, 7])
        #expect(document.entries.map(\.path) == [["udp", "host"], ["udp", "port"], ["mqtt", "tls"]])
        #expect(value(document, ["udp", "host"]) == .string("192.168.1.50"))
        #expect(value(document, ["udp", "port"]) == .integer(8080))
        #expect(value(document, ["mqtt", "tls"]) == .boolean(true))
    }

    @Test func dottedHeadersAndKeysBecomePaths() throws {
        let document = try TOMLDocument(parsing: "udp.port = 1\n[a . b]\n\"c.d\" = 2\n")
        #expect(document.entries[0].table == [])
        #expect(document.entries[0].key == ["udp", "port"])
        #expect(document.tables == [TOMLDocument.Table(path: ["a", "b"], line: 2)])
        #expect(document.entries[1].path == ["a", "b", "c.d"])
        #expect(TOMLDocument.displayKey(document.entries[1].path) == "a.b.\"c.d\"")
    }

    /// Redefinitions are found by path, not by how the path is spelled: a quoted part
    /// holding `.` or `:` is one part, never the same key as a dotted path.
    @Test func quotedPartsAreNotDottedPaths() throws {
        let document = try TOMLDocument(
            parsing: """
                "a.b" = 1
                a.b = 2
                "1:a" = 3
                1.a = 4
                ["c.d"]
                [c.d]
                """
        )
        #expect(document.entries.map(\.path) == [["a.b"], ["a", "b"], ["1:a"], ["1", "a"]])
        #expect(document.tables.map(\.path) == [["c.d"], ["c", "d"]])
        #expect(syntaxError("\"a.b\" = 1\n\"a.b\" = 2\n")?.line == 2)
        #expect(syntaxError("[\"1:a\"]\n[\"1:a\"]\n")?.line == 2)
    }

    @Test func crlfLineEndingsAndByteOrderMark() throws {
        let document = try TOMLDocument(parsing: "\u{FEFF}[udp]\r\nport = 1\r\n")
        #expect(value(document, ["udp", "port"]) == .integer(1))
        #expect(document.entries.first?.line == 2)
    }

    @Test(arguments: [
        (#""a\"b\\c""#, "a\"b\\c"),
        (#""\b\t\n\f\r""#, "\u{08}\t\n\u{0C}\r"),
        (#""\u00e9\U0001F600""#, "é😀"),
        (#"'C:\path\n'"#, #"C:\path\n"#),
        (#""""#, ""),
        ("\"tab\tinside\"", "tab\tinside"),
    ])
    func strings(literal: String, expected: String) throws {
        let document = try TOMLDocument(parsing: "k = \(literal)")
        #expect(value(document, ["k"]) == .string(expected))
    }

    @Test(
        arguments: [
            ("1", 1), ("+17", 17), ("-17", -17), ("0", 0), ("-0", 0), ("1_000", 1000),
            ("0xDEAD_beef", 0xDEAD_BEEF), ("0o755", 0o755), ("0b1101", 13),
            ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min),
        ] as [(String, Int64)]
    )
    func integers(literal: String, expected: Int64) throws {
        #expect(value(try TOMLDocument(parsing: "k = \(literal)"), ["k"]) == .integer(expected))
    }

    @Test(
        arguments: [
            ("2.0", 2.0), ("2e3", 2000), ("-1.5E-2", -0.015), ("+0.25", 0.25), ("1_000.5", 1000.5),
            ("6.626e-34", 6.626e-34), ("1e+16", 1e16), ("0e0", 0), ("inf", .infinity), ("-inf", -.infinity),
        ] as [(String, Double)]
    )
    func floats(literal: String, expected: Double) throws {
        #expect(value(try TOMLDocument(parsing: "k = \(literal)"), ["k"]) == .float(expected))
    }

    @Test func nanParsesAsAFloat() throws {
        guard case .float(let number)? = value(try TOMLDocument(parsing: "k = nan"), ["k"]) else {
            Issue.record("nan did not parse as a float")
            return
        }
        #expect(number.isNaN)
    }

    @Test(arguments: [
        ("k = [1, 2]", "arrays are not used"),
        ("[[servers]]", "arrays of tables"),
        ("k = { a = 1 }", "inline tables are not used"),
        ("k = \"\"\"text\"\"\"", "multi-line strings are not used"),
        ("k = '''text'''", "multi-line strings are not used"),
        ("k = 1979-05-27", "dates and times are not used"),
        ("k = 07:32:00", "dates and times are not used"),
        ("k = 1979-05-27T07:32:00Z", "dates and times are not used"),
    ])
    func unusedFeaturesAreClearErrors(text: String, words: String) throws {
        let error = try #require(syntaxError("[t]\n" + text))
        #expect(error.line == 2)
        #expect(error.message.contains(words))
    }

    @Test(arguments: [
        "k = 007", "k = 1__0", "k = _1", "k = 1_", "k = 0X1F", "k = +0x1F", "k = 0x", "k = 1.", "k = .5",
        "k = 1e", "k = 1.5.2", "k = 9223372036854775808", "k = 0b102", "k = 1e400", "k = 3_.0",
        "k = \"bad \\q escape\"", "k = \"\\u12\"", "k = \"\\uD800\"", "k = \"\\U00110000\"", "k = \"open",
        "k = 'open", "k = hello", "k = TRUE", "k =", "k = 1 2", "= 1", "k 1", "[t", "[t] x", "[]",
        "k = \"a\u{01}b\"", "k = 1 # bell \u{07}", "a.b..c = 1", "k = 1\rx = 2",
    ])
    func malformedInputIsASyntaxErrorWithItsLine(text: String) throws {
        let error = try #require(syntaxError("# first\n\n" + text + "\nafter = 1"))
        #expect(error.line == 3)
        #expect(!error.message.isEmpty)
    }

    @Test func valueErrorsNameTheKeyButNotTheValue() throws {
        let error = try #require(syntaxError("[mqtt]\npassword = hunter2secret"))
        #expect(error.key == ["mqtt", "password"])
        #expect(!error.description.contains("hunter2secret"))
        let escape = try #require(syntaxError("password = \"abc\\qdef\""))
        #expect(!escape.description.contains("abc"))
        #expect(escape.message.contains("escape"))
    }

    @Test(arguments: [
        ("[a]\nk = 1\nk = 2", 3, "duplicate key"),
        ("[a]\n[a]", 2, "defined twice"),
        ("a.b = 1\n[a]", 2, "dotted key"),
        ("a = 1\na.b = 2", 2, "value"),
        ("a = 1\n[a.b]", 2, "value"),
        ("[a.b]\n[a]\nb = 1", 3, "already a table"),
        ("[a]\nb.c = 1\nb = 2", 3, "already a table"),
        ("[a.b]\n[x]\n[a]\nb.c = 1", 4, "header"),
    ])
    func redefinitionsAreErrors(text: String, line: Int, words: String) throws {
        let error = try #require(syntaxError(text))
        #expect(error.line == line)
        #expect(error.message.contains(words))
    }

    @Test func superTableMayBeDefinedAfterItsChild() throws {
        let document = try TOMLDocument(parsing: "[a.b]\nc = 1\n[a]\nd = 2")
        #expect(document.entries.map(\.path) == [["a", "b", "c"], ["a", "d"]])
    }

    @Test func deepKeysAreRefusedNotRecursed() throws {
        let deep = Array(repeating: "a", count: 10_000).joined(separator: ".") + " = 1"
        let error = try #require(syntaxError(deep))
        #expect(error.message.contains("deeper"))
    }

    @Test func hostileInputEndsInErrorOrDocument() {
        let samples = [
            String(repeating: "[", count: 50_000), String(repeating: "\"", count: 50_001),
            String(repeating: "a=1\n", count: 2), String(repeating: "9", count: 100_000),
            "k = " + String(repeating: "1", count: 100_000) + ".5", "\u{0}", "\r", "\\", "k = \"\\",
            "k = \"\\U", String(repeating: "#", count: 10_000) + "\n[x]",
        ]
        for sample in samples {
            _ = syntaxError(sample)
        }
        #expect(syntaxError(String(repeating: "a=1\n", count: 2))?.line == 2)
    }

    @Test func quotingEscapesControlCharacters() {
        #expect(TOMLDocument.quoted("a\"b\\c\n\u{01}\u{7F}é") == #""a\"b\\c\n\u0001\u007Fé""#)
    }

    /// The rule is SafeText's: a configuration value shown by `gate config show` or named in an
    /// error message must not reorder or hide the text around it on the terminal.
    @Test func quotingEscapesC1AndInvisibleCharactersAndReadsBack() throws {
        let text = "a\u{9B}b\u{202E}c\u{2028}d\u{200B}e\u{E0001}é😀"
        let quoted = TOMLDocument.quoted(text)
        #expect(quoted == #""a\u009Bb\u202Ec\u2028d\u200Be\U000E0001é😀""#)
        #expect(value(try TOMLDocument(parsing: "k = \(quoted)"), ["k"]) == .string(text))
    }
}
