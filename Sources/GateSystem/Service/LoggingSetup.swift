#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GateCore
import Logging
import Synchronization

/// swift-log set up the way an appliance needs it: plain lines on stderr for a
/// shell, syslog priority prefixes when journald reads stderr (docs/CONTRACT.md#logging).
public enum LoggingSetup {
    private static let done = Mutex(false)

    /// Bootstraps swift-log once per process; later calls are ignored.
    public static func bootstrap(level: Logger.Level, program: String) {
        let first = done.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let journald = getenv("JOURNAL_STREAM") != nil
        LoggingSystem.bootstrap { label in
            StderrLogHandler(label: label, program: program, journald: journald, logLevel: level)
        }
    }
}

/// Writes one line per message to stderr with a single `write(2)`, so lines
/// from threads never interleave.
public struct StderrLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    let label: String
    let program: String
    let journald: Bool

    public init(label: String, program: String, journald: Bool, logLevel: Logger.Level) {
        self.label = label
        self.program = program
        self.journald = journald
        self.logLevel = logLevel
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata {
            merged.merge(extra) { _, new in new }
        }
        var line = journald ? "<\(Self.priority(event.level))>" : "\(program): \(event.level): "
        line += SafeText.escaped("\(event.message)")
        for key in merged.keys.sorted() {
            line += " \(key)=\(Self.quoted("\(merged[key]!)"))"
        }
        line += "\n"
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
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
    /// characters are escaped (`SafeText.escaped`), so that a value read from a shared
    /// file can neither forge a log line nor drive the terminal that shows it.
    static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { scalar in
            scalar == " " || scalar == "\"" || scalar == "=" || scalar == "\\" || SafeText.isUnsafe(scalar)
        }
        guard needsQuotes else { return value }
        var text = "\""
        for character in SafeText.escaped(value).unicodeScalars {
            if character == "\"" { text += "\\\"" } else { text.unicodeScalars.append(character) }
        }
        return text + "\""
    }
}
