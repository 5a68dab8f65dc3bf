import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One line per message on stderr, each written with a single `write(2)`, so that
/// lines from several threads never interleave, and around a live terminal line
/// (`LiveLine`), never into its middle. What a line says is the program's
/// own (`format`): gate's carry journald priorities and escape what came from
/// shared files; the simulator's read as a narrative.
public struct StderrLogHandler: LogHandler {
    /// Makes the line (without its newline) from the level, the message and the
    /// handler's metadata merged with the event's.
    public typealias Format = @Sendable (Logger.Level, Logger.Message, Logger.Metadata) -> String

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level
    let format: Format

    public init(logLevel: Logger.Level, format: @escaping Format) {
        self.logLevel = logLevel
        self.format = format
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
        let line = format(event.level, event.message, merged) + "\n"
        // A failed write is dropped: there is nowhere left to report it.
        LiveLine.around { _ = Descriptor.writeAll(STDERR_FILENO, Array(line.utf8)) }
    }
}
