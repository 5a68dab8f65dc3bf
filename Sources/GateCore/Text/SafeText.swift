/// Text from the shared folders (docs/CONTRACT.md#shared-folders) on its way to a terminal or a log line.
///
/// Every member of group `gate` can write `lock`, `status.json` and `history.jsonl`,
/// so their strings are validated when read (`isLabel`) and escaped when shown
/// (`escaped`): an escape sequence in a field must never retitle a terminal, move its
/// cursor, or forge a log line.
public enum SafeText {
    /// The longest label a shared file may hold (a source, an adapter, an outcome, an error).
    public static let maximumLabelBytes = 64

    /// Whether a scalar must not reach a terminal or a log as it is: C0 controls
    /// (newline and tab included), DEL, C1 controls (U+0080–U+009F, e.g. U+009B, a
    /// one-character CSI on some terminals), and Unicode's invisible format and
    /// separator characters (bidirectional overrides, zero-width characters, U+2028).
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x20 || (0x7F...0x9F).contains(value) { return true }
        if value < 0xA0 { return false }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// `text` with every unsafe scalar written as an escape (`\n`, `\r`, `\t`, `\x1b`,
    /// `\u{9b}`, `\u{202e}`) and each backslash doubled, so that the escaped form is
    /// unambiguous. Text with nothing to escape comes back unchanged.
    public static func escaped(_ text: String) -> String {
        escaped(text, as: .terminal)
    }

    /// `text` for a reader of markup (Pango in waybar and genmon, a notification server's
    /// body): outsider-written text stays text (`<b>` is shown, not obeyed; `&#10;` is shown,
    /// not a line break), and unsafe scalars are dropped (`EscapeSpelling.markup`).
    public static func markup(_ text: String) -> String {
        escaped(text, as: .markup)
    }

    /// `text` with each scalar that `spelling` names, and each unsafe one (`isUnsafe`), written
    /// as the format spells it; the one place that decides what is escaped, whatever the format.
    public static func escaped(_ text: String, as spelling: EscapeSpelling) -> String {
        guard text.utf8.contains(where: spelling.mayEscape) else { return text }
        var output = ""
        for scalar in text.unicodeScalars {
            if let name = spelling.named(scalar) {
                output += name
            } else if isUnsafe(scalar) {
                output += spelling.code(scalar)
            } else {
                output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    /// Whether `text` is a label as gate writes them into the shared files: 1 to
    /// `maximumLabelBytes` printable ASCII characters, no space (`cli`, `button`,
    /// `udp`, `success`, `operationTimeout`).
    public static func isLabel(_ text: String) -> Bool {
        let bytes = text.utf8
        return !bytes.isEmpty && bytes.count <= maximumLabelBytes && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
