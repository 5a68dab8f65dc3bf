import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A terminal line rewritten in place (`gate open`'s live state), and the one owner
/// of that line: a log line written to the same terminal clears it first and draws
/// it again after, under one lock, so that log lines never land in its middle.
public final class LiveLine: Sendable {
    /// Erase the whole line and go to its start.
    static let erase = "\r\u{1B}[2K"
    private let fd: Int32
    /// What the line shows; nil once cleared.
    private let shown = Mutex<String?>(nil)
    /// The line that stderr's log lines go around, if any.
    private static let current = Mutex<LiveLine?>(nil)

    public init(fd: Int32) {
        self.fd = fd
    }

    /// Makes this the line that log lines go around, when stderr is a terminal (log
    /// lines into a file or a pipe cannot land on it).
    public func activate() {
        guard isatty(STDERR_FILENO) == 1 else { return }
        Self.current.withLock { $0 = self }
    }

    /// Shows `text` in place of what the line showed.
    public func draw(_ text: String) {
        shown.withLock { shown in
            shown = text
            write(Self.erase + text)
        }
    }

    /// Erases the line and stops owning it: what follows starts on a clean line.
    public func clear() {
        Self.current.withLock { if $0 === self { $0 = nil } }
        shown.withLock { shown in
            if shown != nil { write(Self.erase) }
            shown = nil
        }
    }

    /// Runs `body` (a whole log line's write) with the live line out of its way.
    public static func around(_ body: () -> Void) {
        guard let line = current.withLock({ $0 }) else {
            body()
            return
        }
        line.shown.withLock { shown in
            guard let text = shown else {
                body()
                return
            }
            line.write(erase)
            body()
            line.write(erase + text)
        }
    }

    private func write(_ text: String) {
        _ = Descriptor.writeAll(fd, Array(text.utf8))
    }
}
