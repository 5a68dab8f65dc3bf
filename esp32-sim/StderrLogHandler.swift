import Glibc
import Logging

/// `esp32-sim: <message>` lines on stderr. Info lines carry no level (they are the normal
/// narrative a user or a test reads); other levels are named.
///
/// Each line is one write(2): the receive thread and the relay's timer tasks log at the
/// same time, and their lines must not interleave mid-line.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(level: Logger.Level) {
        self.logLevel = level
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = "esp32-sim: "
        if event.level != .info {
            line += "\(event.level): "
        }
        line += event.message.description
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for key in merged.keys.sorted() {
            line += " \(key)=\(merged[key]!)"
        }
        line += "\n"
        var bytes = Array(line.utf8)
        let count = bytes.count
        while write(STDERR_FILENO, &bytes, count) < 0 && errno == EINTR {}
    }
}
