/// A JSON value with object keys kept in the order they were written.
///
/// The result of `gate open --json` and the status file are read by people as
/// much as by scripts; a fixed key order keeps them readable and diffable.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.serialized() == rhs.serialized()
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(serialized())
    }

    /// Compact JSON on one line.
    public func serialized() -> String {
        var output = ""
        write(to: &output)
        return output
    }

    private func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .int(let value): output += String(value)
        case .string(let value): JSONValue.writeString(value, to: &output)
        case .array(let values):
            output += "["
            for (index, value) in values.enumerated() {
                if index > 0 { output += "," }
                value.write(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { output += "," }
                JSONValue.writeString(key, to: &output)
                output += ":"
                value.write(to: &output)
            }
            output += "}"
        }
    }

    private static func writeString(_ string: String, to output: inout String) {
        // C1 controls and invisible format characters (U+009B, U+202E, U+2028) too: never
        // raw on a terminal that shows the JSON (`gate history --json`).
        output += "\""
        output += SafeText.escaped(string, as: .json)
        output += "\""
    }
}

extension JSONValue {
    public static func string(_ value: String?) -> JSONValue {
        value.map(JSONValue.string) ?? .null
    }
}

extension OpeningResult {
    /// The object printed by `gate open --json` (docs/CONTRACT.md#the-json-result).
    public var json: JSONValue {
        .object([
            ("outcome", .string(outcome.rawValue)),
            ("error", .string(error?.rawValue)),
            ("adapter", .string(adapter?.rawValue)),
            ("duration_ms", .int(duration.milliseconds)),
            ("attempts", .array(attempts.map(\.json))),
            ("message", .string(message)),
        ])
    }
}

extension AttemptRecord {
    public var json: JSONValue {
        .object([
            ("adapter", .string(adapter.rawValue)),
            ("outcome", .string(outcome.rawValue)),
            ("reason", .string(reason?.description)),
            ("duration_ms", duration.map { .int($0.milliseconds) } ?? .null),
            ("trigger_sent", .bool(triggerSent)),
        ])
    }
}
