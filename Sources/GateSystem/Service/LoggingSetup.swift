import Logging
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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
            StderrLogHandler(logLevel: level, format: GateLogLine.format(program: program, journald: journald))
        }
    }
}
