import Logging
import Synchronization

/// Log lines kept in memory, for tests that check what was logged and with which
/// metadata instead of grepping a process's stderr.
///
///     let logs = LogCapture()
///     let pipeline = OpeningPipeline(..., logger: logs.logger(), ...)
///     #expect(logs.entries(message: "adapter finished").first?.metadata["trigger_sent"] == "true")
public final class LogCapture: Sendable {
    public struct Entry: Sendable, CustomStringConvertible {
        public let level: Logger.Level
        public let message: String
        /// The logger's metadata merged with the line's own, each value as text.
        public let metadata: [String: String]
        public let label: String

        public var description: String {
            let pairs = metadata.keys.sorted().map { "\($0)=\(metadata[$0]!)" }.joined(separator: " ")
            return "\(level): \(message)" + (pairs.isEmpty ? "" : " " + pairs)
        }
    }

    private let store = Mutex<[Entry]>([])
    private let onEntry: (@Sendable (Entry) -> Void)?

    /// - Parameter onEntry: runs for every line, on the logging thread, before the call
    ///   that logged returns: a test can pause a thread at a known line (an adapter right
    ///   after its send, say), as a starved or stopped process would be paused there.
    public init(onEntry: (@Sendable (Entry) -> Void)? = nil) {
        self.onEntry = onEntry
    }

    /// A logger whose lines end up here (everything from `level` up).
    public func logger(label: String = "gate.test", level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: label) { label in CapturingLogHandler(label: label, capture: self) }
        logger.logLevel = level
        return logger
    }

    /// Every line so far, in order.
    public var entries: [Entry] { store.withLock { $0 } }

    /// Lines whose message is exactly `message`.
    public func entries(message: String) -> [Entry] {
        entries.filter { $0.message == message }
    }

    /// Lines whose message contains `text`.
    public func entries(containing text: String) -> [Entry] {
        entries.filter { $0.message.contains(text) }
    }

    /// Every line, one per line of text: for failure messages.
    public var text: String { entries.map(\.description).joined(separator: "\n") }

    public func removeAll() {
        store.withLock { $0.removeAll() }
    }

    fileprivate func append(_ entry: Entry) {
        store.withLock { $0.append(entry) }
        onEntry?(entry)
    }
}

/// The `LogHandler` behind `LogCapture.logger()`.
public struct CapturingLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace
    let label: String
    let capture: LogCapture

    public init(label: String, capture: LogCapture) {
        self.label = label
        self.capture = capture
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
        capture.append(
            LogCapture.Entry(
                level: event.level,
                message: "\(event.message)",
                metadata: merged.mapValues { "\($0)" },
                label: label
            )
        )
    }
}
