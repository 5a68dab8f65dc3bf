/// Reads one line of TOML: a blank or comment line, a `[table]` header, or a
/// `key = value`. Works on UTF-8 bytes with an index that only moves forward,
/// so any input ends in time proportional to its length.
struct TOMLLineScanner {
    enum Statement: Equatable {
        case blank
        case table([String])
        case keyValue([String], TOMLValue)
    }

    private let bytes: [UInt8]
    private var index: Int
    private let end: Int
    private let line: Int
    /// Set once the key of a `key = value` line is read, so value errors name it.
    private var key: [String]?

    init(bytes: [UInt8], start: Int, end: Int, line: Int) {
        self.bytes = bytes
        self.index = start
        self.end = end
        self.line = line
    }

    mutating func statement() throws(TOMLSyntaxError) -> Statement {
        skipWhitespace()
        let result: Statement
        switch peek() {
        case nil, UInt8(ascii: "#"):
            result = .blank
        case UInt8(ascii: "["):
            if peek(offset: 1) == UInt8(ascii: "[") {
                throw failure("arrays of tables ([[...]]) are not used in gate's configuration")
            }
            index += 1
            let path = try keyPath()
            guard consume(UInt8(ascii: "]")) else { throw failure("expected `]` to close the table header") }
            result = .table(path)
        default:
            let path = try keyPath()
            guard consume(UInt8(ascii: "=")) else { throw failure("expected `=` after the key") }
            key = path
            skipWhitespace()
            result = .keyValue(path, try value())
        }
        skipWhitespace()
        try comment()
        return result
    }

    // MARK: Keys

    static func isBareKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    private mutating func keyPath() throws(TOMLSyntaxError) -> [String] {
        var path: [String] = []
        while true {
            skipWhitespace()
            path.append(try simpleKey())
            if path.count > TOMLDocument.maximumKeyDepth {
                throw failure(
                    "keys nested deeper than \(TOMLDocument.maximumKeyDepth) levels are not used in gate's configuration"
                )
            }
            skipWhitespace()
            guard consume(UInt8(ascii: ".")) else { return path }
        }
    }

    private mutating func simpleKey() throws(TOMLSyntaxError) -> String {
        switch peek() {
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            return try oneLineString(refusing: "a multi-line string cannot be a key")
        case nil:
            throw failure("expected a key")
        case let byte?:
            let start = index
            while let next = peek(), Self.isBareKeyByte(next) { index += 1 }
            guard index > start else {
                let shown = (0x21...0x7E).contains(byte) ? "`\(Character(Unicode.Scalar(byte)))`" : "this character"
                throw failure(
                    "expected a key, found \(shown); bare keys use A–Z, a–z, 0–9, `_` and `-`, other keys need quotes"
                )
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
    }

    // MARK: Values

    private mutating func value() throws(TOMLSyntaxError) -> TOMLValue {
        switch peek() {
        case nil, UInt8(ascii: "#"):
            throw failure("expected a value after `=`")
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            return .string(try oneLineString(refusing: "multi-line strings are not used in gate's configuration"))
        case UInt8(ascii: "["):
            throw failure("arrays are not used in gate's configuration")
        case UInt8(ascii: "{"):
            throw failure("inline tables are not used in gate's configuration")
        default:
            let start = index
            while let byte = peek(),
                Self.isBareKeyByte(byte) || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
            {
                index += 1
            }
            return try scalar(Array(bytes[start..<index]))
        }
    }

    /// A bare value: boolean, number, or one of the forms gate refuses.
    /// Messages describe the token without quoting it: it may be a password.
    private func scalar(_ token: [UInt8]) throws(TOMLSyntaxError) -> TOMLValue {
        switch String(decoding: token, as: UTF8.self) {
        case "true": return .boolean(true)
        case "false": return .boolean(false)
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan", "-nan": return .float(.nan)
        default: break
        }
        guard let first = token.first else {
            throw failure("expected a value: a quoted string, a number, true or false")
        }
        if TOMLNumber.looksLikeDateOrTime(token) {
            throw failure("dates and times are not used in gate's configuration")
        }
        let isNumeric =
            TOMLNumber.isDigit(first) || first == UInt8(ascii: "+") || first == UInt8(ascii: "-")
            || first == UInt8(ascii: ".")
        guard isNumeric else {
            throw failure("this value is not valid TOML; strings need quotes (\"...\"), booleans are true or false")
        }
        do throws(TOMLNumber.Failure) {
            return try TOMLNumber.parse(token)
        } catch {
            throw failure(error.message)
        }
    }

    // MARK: Strings

    /// A basic (`"…"`) or literal (`'…'`) string; a multi-line one (`"""`, `'''`) is
    /// refused with `multiLineProblem`.
    private mutating func oneLineString(refusing multiLineProblem: String) throws(TOMLSyntaxError) -> String {
        if peek(offset: 1) == peek() && peek(offset: 2) == peek() { throw failure(multiLineProblem) }
        return try peek() == UInt8(ascii: "\"") ? basicString() : literalString()
    }

    private mutating func basicString() throws(TOMLSyntaxError) -> String {
        index += 1
        var text: [UInt8] = []
        while true {
            guard let byte = peek() else { throw failure("a string is not closed before the end of the line") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try escape(into: &text)
            default:
                if Self.isControl(byte) { throw failure("control characters in a string must be written as escapes") }
                text.append(byte)
            }
        }
    }

    private mutating func escape(into text: inout [UInt8]) throws(TOMLSyntaxError) {
        guard let byte = peek() else { throw failure("a string is not closed before the end of the line") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): text.append(0x22)
        case UInt8(ascii: "\\"): text.append(0x5C)
        case UInt8(ascii: "b"): text.append(0x08)
        case UInt8(ascii: "t"): text.append(0x09)
        case UInt8(ascii: "n"): text.append(0x0A)
        case UInt8(ascii: "f"): text.append(0x0C)
        case UInt8(ascii: "r"): text.append(0x0D)
        case UInt8(ascii: "u"): try unicodeEscape(digits: 4, into: &text)
        case UInt8(ascii: "U"): try unicodeEscape(digits: 8, into: &text)
        default:
            throw failure(
                "invalid escape sequence in a string; TOML allows \\\" \\\\ \\b \\t \\n \\f \\r \\uXXXX and \\UXXXXXXXX"
            )
        }
    }

    private mutating func unicodeEscape(digits: Int, into text: inout [UInt8]) throws(TOMLSyntaxError) {
        var value: UInt32 = 0
        for _ in 0..<digits {
            guard let byte = peek(), let digit = TOMLNumber.digitValue(byte), digit < 16 else {
                throw failure("a \\u escape needs 4 hexadecimal digits and a \\U escape 8")
            }
            index += 1
            // At most 8 digits: the value stays below 2^32.
            value = value &* 16 &+ UInt32(digit)
        }
        guard let scalar = Unicode.Scalar(value) else {
            throw failure("a \\u or \\U escape must name a Unicode scalar value (not a surrogate, at most 10FFFF)")
        }
        UTF8.encode(scalar) { text.append($0) }
    }

    private mutating func literalString() throws(TOMLSyntaxError) -> String {
        index += 1
        let start = index
        while true {
            guard let byte = peek() else { throw failure("a string is not closed before the end of the line") }
            if byte == UInt8(ascii: "'") { break }
            if Self.isControl(byte) { throw failure("control characters are not allowed in a literal string") }
            index += 1
        }
        defer { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    // MARK: Bytes

    /// Control characters other than tab; TOML refuses them unescaped.
    static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    private mutating func comment() throws(TOMLSyntaxError) {
        guard let byte = peek() else { return }
        guard byte == UInt8(ascii: "#") else {
            if byte == 0x0D { throw failure("a carriage return must be followed by a line feed") }
            throw failure(key == nil ? "unexpected text after the table header" : "unexpected text after the value")
        }
        while let next = peek() {
            if Self.isControl(next) { throw failure("control characters are not allowed in comments") }
            index += 1
        }
    }

    private func peek(offset: Int = 0) -> UInt8? {
        index + offset < end ? bytes[index + offset] : nil
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 { index += 1 }
    }

    private func failure(_ message: String) -> TOMLSyntaxError {
        TOMLSyntaxError(line: line, key: key, message: message)
    }
}
