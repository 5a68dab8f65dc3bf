/// TOML's number grammar: decimal integers and floats with `_` between
/// digits and no leading zeros, and `0x`/`0o`/`0b` integers.
///
/// Checked here byte by byte because Swift's own conversions accept forms
/// TOML does not (`1.`, `.5`, `007`) and refuse some it does (`1_000`).
enum TOMLNumber {
    struct Failure: Error {
        var message: String
    }

    /// Longer number tokens are refused: no setting needs them, and it keeps
    /// the float conversion cheap whatever the file holds.
    static let maximumLength = 256

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// The value of a hexadecimal digit (either case), or nil.
    static func digitValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }

    /// `1979-05-27…` or `07:32:00…`: a TOML date or time, which gate never takes.
    static func looksLikeDateOrTime(_ token: [UInt8]) -> Bool {
        if token.contains(UInt8(ascii: ":")) { return true }
        return token.count >= 5 && token[0..<4].allSatisfy(isDigit) && token[4] == UInt8(ascii: "-")
    }

    static func parse(_ token: [UInt8]) throws(Failure) -> TOMLValue {
        guard token.count <= maximumLength else {
            throw Failure(message: "this number is longer than \(maximumLength) characters")
        }
        if let radix = radixPrefix(token, at: 0) {
            return .integer(try integer(token, from: 2, radix: radix, negative: false))
        }
        let signed = token.first == UInt8(ascii: "+") || token.first == UInt8(ascii: "-")
        if signed, radixPrefix(token, at: 1) != nil {
            throw Failure(message: "a hexadecimal, octal or binary integer cannot have a sign")
        }
        let start = signed ? 1 : 0
        let isFloat = token.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
        guard start < token.count, isDigit(token[start]) else {
            throw Failure(
                message: isFloat ? "a float needs a digit before its decimal point" : "expected digits after the sign"
            )
        }
        let integerEnd = try digitRun(token, from: start, radix: 10)
        if token[start] == UInt8(ascii: "0"), integerEnd - start > 1 {
            throw Failure(message: "leading zeros are not allowed in a decimal number")
        }
        if !isFloat {
            guard integerEnd == token.count else { throw notANumber }
            return .integer(try integer(token, from: start, radix: 10, negative: token.first == UInt8(ascii: "-")))
        }
        return .float(try float(token, integerEnd: integerEnd))
    }

    private static var notANumber: Failure {
        Failure(message: "this is not a valid number")
    }

    /// 16, 8 or 2 when `0x`, `0o` or `0b` (lower case only, as TOML says) starts at `index`.
    private static func radixPrefix(_ token: [UInt8], at index: Int) -> Int? {
        guard index + 1 < token.count, token[index] == UInt8(ascii: "0") else { return nil }
        switch token[index + 1] {
        case UInt8(ascii: "x"): return 16
        case UInt8(ascii: "o"): return 8
        case UInt8(ascii: "b"): return 2
        default: return nil
        }
    }

    /// The end of a run of digits in which every `_` sits between two digits.
    private static func digitRun(_ token: [UInt8], from start: Int, radix: Int) throws(Failure) -> Int {
        func isDigit(_ index: Int) -> Bool {
            index >= start && index < token.count && (digitValue(token[index]).map { $0 < radix } ?? false)
        }
        var index = start
        while index < token.count {
            if isDigit(index) {
                index += 1
            } else if token[index] == UInt8(ascii: "_") {
                guard isDigit(index - 1), isDigit(index + 1) else {
                    throw Failure(message: "an underscore in a number must be between two digits")
                }
                index += 1
            } else {
                break
            }
        }
        guard index > start else { throw Failure(message: "this number is missing its digits") }
        return index
    }

    private static func integer(_ token: [UInt8], from start: Int, radix: Int, negative: Bool) throws(Failure) -> Int64
    {
        guard try digitRun(token, from: start, radix: radix) == token.count else {
            throw radix == 10 ? notANumber : Failure(message: "this is not a valid base-\(radix) integer")
        }
        let digits = String(decoding: token[start...].filter { $0 != UInt8(ascii: "_") }, as: UTF8.self)
        // The digits were checked above: nil here means the value does not fit.
        guard let value = Int64((negative ? "-" : "") + digits, radix: radix) else {
            throw Failure(message: "this integer does not fit in 64 bits")
        }
        return value
    }

    private static func float(_ token: [UInt8], integerEnd: Int) throws(Failure) -> Double {
        var index = integerEnd
        if index < token.count, token[index] == UInt8(ascii: ".") {
            index += 1
            guard index < token.count, isDigit(token[index]) else {
                throw Failure(message: "a decimal point must be followed by digits")
            }
            index = try digitRun(token, from: index, radix: 10)
        }
        if index < token.count, token[index] == UInt8(ascii: "e") || token[index] == UInt8(ascii: "E") {
            index += 1
            if index < token.count, token[index] == UInt8(ascii: "+") || token[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < token.count, isDigit(token[index]) else {
                throw Failure(message: "an exponent must be followed by digits")
            }
            index = try digitRun(token, from: index, radix: 10)
        }
        guard index == token.count else { throw notANumber }
        let text = String(decoding: token.filter { $0 != UInt8(ascii: "_") }, as: UTF8.self)
        guard let value = Double(text) else { throw notANumber }
        guard value.isFinite else { throw Failure(message: "this number is too large for a 64-bit float") }
        return value
    }
}
