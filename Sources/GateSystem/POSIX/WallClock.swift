import GateCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Wall-clock time for records people read (status file, history, trigger log).
public enum WallClock {
    /// Nanoseconds since the Unix epoch.
    public static func nowNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// `2026-11-21T10:00:00.123Z`
    public static func iso8601(nanoseconds: Int64 = nowNanoseconds()) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        let millis = Int((nanoseconds % 1_000_000_000) / 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))"
            + "T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    /// Reads back what `iso8601` writes (`2026-11-21T10:00:00.123Z`); nil for anything
    /// else, and for a time outside what `Int64` nanoseconds hold (`WallTime`): such a
    /// time comes from a hostile or broken file and is invalid, never a crash.
    public static func nanoseconds(fromISO8601 text: String) -> Int64? {
        WallTime.nanoseconds(fromISO8601: text)
    }

    /// How long until the wall-clock instant `text` (zero when it is past).
    public static func duration(until text: String) -> Duration? {
        guard let then = nanoseconds(fromISO8601: text) else { return nil }
        let (left, overflow) = then.subtractingReportingOverflow(nowNanoseconds())
        return .nanoseconds(overflow ? .max : max(0, left))
    }
}
