import GateCore
import Logging
import Plumbing

/// How gate's log lines read: `gate: info: message key=value` in a shell, a syslog
/// priority prefix instead when journald reads stderr (docs/CONTRACT.md#logging).
public enum GateLogLine {
    public static func format(program: String, journald: Bool) -> StderrLogHandler.Format {
        { level, message, metadata in
            var line = journald ? "<\(priority(level))>" : "\(program): \(level): "
            line += SafeText.escaped("\(message)")
            for key in metadata.keys.sorted() {
                line += " \(key)=\(quoted("\(metadata[key]!)"))"
            }
            return line
        }
    }

    /// syslog priorities as journald reads them from a stream prefix.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// Values with spaces are quoted so that `key=value` pairs stay parseable; control
    /// characters (C0 with `\r` and `\n`, DEL, C1 such as U+009B) and invisible format
    /// characters are escaped (`EscapeSpelling.logValue`), so that a value read from a shared
    /// file can neither forge a log line nor drive the terminal that shows it.
    static func quoted(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty
            || value.unicodeScalars.contains { scalar in
                scalar == " " || scalar == "\"" || scalar == "=" || scalar == "\\" || SafeText.isUnsafe(scalar)
            }
        guard needsQuotes else { return value }
        return "\"" + SafeText.escaped(value, as: .logValue) + "\""
    }
}
