/// How one format writes the scalars that `SafeText.escaped(_:as:)` decides to escape.
///
/// The decision (which scalars are unsafe: `SafeText.isUnsafe`) is made in one place;
/// a spelling only says how its format writes them, so that the terminal, the log, JSON,
/// TOML and markup cannot drift apart on what is shown raw.
public struct EscapeSpelling: Sendable {
    /// The format's own escape for a scalar, or nil: its quote and escape characters (safe
    /// themselves, but they would end or bend the text) and its short names for some
    /// controls (`\n`).
    let named: @Sendable (Unicode.Scalar) -> String?
    /// How any other unsafe scalar is written.
    let code: @Sendable (Unicode.Scalar) -> String
    /// Printable ASCII bytes that `named` spells, as two bit masks (0x00–0x3F, 0x40–0x7F):
    /// text made only of other printable ASCII is returned as it is without a look at its
    /// scalars, which is the common case (states, times, adapters, messages).
    private let reservedLow: UInt64
    private let reservedHigh: UInt64

    init(
        named: @escaping @Sendable (Unicode.Scalar) -> String?,
        code: @escaping @Sendable (Unicode.Scalar) -> String
    ) {
        self.named = named
        self.code = code
        var low: UInt64 = 0
        var high: UInt64 = 0
        for byte in UInt8(0x20)..<0x7F where named(Unicode.Scalar(byte)) != nil {
            if byte < 0x40 { low |= 1 << byte } else { high |= 1 << (byte - 0x40) }
        }
        reservedLow = low
        reservedHigh = high
    }

    /// Whether a UTF-8 byte may start something to escape (a control, a reserved character,
    /// or a non-ASCII scalar that `isUnsafe` must judge).
    func mayEscape(_ byte: UInt8) -> Bool {
        if byte < 0x20 || byte >= 0x7F { return true }
        return byte < 0x40 ? reservedLow >> byte & 1 == 1 : reservedHigh >> (byte - 0x40) & 1 == 1
    }

    /// `value` as `digits` hexadecimal digits.
    static func hex(_ value: UInt32, digits: Int, uppercase: Bool = false) -> String {
        let hex = String(value, radix: 16, uppercase: uppercase)
        return String(repeating: "0", count: max(0, digits - hex.count)) + hex
    }
}

extension EscapeSpelling {
    /// For a terminal or a log line (`\n`, `\x1b`, `\u{202e}`), backslashes doubled so
    /// that the escaped form is unambiguous.
    public static let terminal = EscapeSpelling(named: terminalName, code: terminalCode)

    /// A log value inside double quotes: the terminal's spelling, and `\"`.
    public static let logValue = EscapeSpelling(
        named: { $0 == "\"" ? "\\\"" : terminalName($0) },
        code: terminalCode
    )

    /// The inside of a JSON string (RFC 8259): `\uXXXX`, as a surrogate pair beyond the BMP.
    public static let json = EscapeSpelling(
        named: { scalar in
            switch scalar {
            case "\"": return "\\\""
            case "\\", "\n", "\r", "\t": return terminalName(scalar)
            default: return nil
            }
        },
        code: { scalar in
            guard scalar.value > 0xFFFF else { return "\\u" + hex(scalar.value, digits: 4) }
            let offset = scalar.value - 0x10000
            return "\\u" + hex(0xD800 + (offset >> 10), digits: 4) + "\\u" + hex(0xDC00 + (offset & 0x3FF), digits: 4)
        }
    )

    /// The inside of a TOML basic string: its short escapes, `\uXXXX`, `\UXXXXXXXX` beyond the BMP.
    public static let toml = EscapeSpelling(
        named: { scalar in scalar == "\"" || scalar == "\\" ? "\\" + String(scalar) : tomlControlName(scalar) },
        code: tomlCode
    )

    /// Text inside a TOML comment: no quotes to protect, but a line break must not end the
    /// comment and turn the rest into TOML.
    public static let tomlComment = EscapeSpelling(named: tomlControlName, code: tomlCode)

    /// Text for a reader of markup (Pango, a notification server's body; both a subset of
    /// XML): `&`, `<`, `>` and both quotes as entities, unsafe scalars dropped, as XML 1.0
    /// has no place for most of them either.
    public static let markup = EscapeSpelling(
        named: { scalar in
            switch scalar {
            case "&": return "&amp;"
            case "<": return "&lt;"
            case ">": return "&gt;"
            case "\"": return "&quot;"
            case "'": return "&#39;"
            default: return nil
            }
        },
        code: { _ in "" }
    )

    /// Text for a line-oriented reader (a bar, `gate status`): unsafe scalars dropped.
    public static let dropped = EscapeSpelling(named: { _ in nil }, code: { _ in "" })

    /// A polybar label: `%{…}` is its formatting tag, `%%` a literal `%`; unsafe scalars dropped.
    public static let polybar = EscapeSpelling(named: { $0 == "%" ? "%%" : nil }, code: { _ in "" })

    @Sendable private static func terminalName(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\\": return "\\\\"
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default: return nil
        }
    }

    @Sendable private static func terminalCode(_ scalar: Unicode.Scalar) -> String {
        scalar.value < 0x80 ? "\\x" + hex(scalar.value, digits: 2) : "\\u{" + hex(scalar.value, digits: 1) + "}"
    }

    @Sendable private static func tomlControlName(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\u{08}": return "\\b"
        case "\t": return "\\t"
        case "\n": return "\\n"
        case "\u{0C}": return "\\f"
        case "\r": return "\\r"
        default: return nil
        }
    }

    @Sendable private static func tomlCode(_ scalar: Unicode.Scalar) -> String {
        scalar.value > 0xFFFF
            ? "\\U" + hex(scalar.value, digits: 8, uppercase: true)
            : "\\u" + hex(scalar.value, digits: 4, uppercase: true)
    }
}
