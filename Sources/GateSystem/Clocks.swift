#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GateCore

/// `CLOCK_MONOTONIC`, the clock every deadline is measured on: it does not jump
/// when NTP sets the time on a Pi that booted without a real-time clock.
public enum MonotonicClock {
    public static func now() -> MonotonicInstant {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return MonotonicInstant(nanoseconds: UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec))
    }
}

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

    /// Reads back what `iso8601` writes (`2026-11-21T10:00:00.123Z`); nil for anything else.
    public static func nanoseconds(fromISO8601 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 24, bytes[4] == 0x2d, bytes[7] == 0x2d, bytes[10] == 0x54, bytes[13] == 0x3a,
              bytes[16] == 0x3a, bytes[19] == 0x2e, bytes[23] == 0x5a else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19), let millis = number(20..<23) else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        guard seconds != -1 else { return nil }
        return Int64(seconds) * 1_000_000_000 + Int64(millis) * 1_000_000
    }

    /// How long until the wall-clock instant `text` (zero when it is past).
    public static func duration(until text: String) -> Duration? {
        guard let then = nanoseconds(fromISO8601: text) else { return nil }
        return .nanoseconds(max(0, then - nowNanoseconds()))
    }
}

/// The clock an opening's deadlines, timers and event stamps use: CLOCK_MONOTONIC
/// in gate, one the test moves by hand in the pipeline's own tests.
public protocol OpeningClock: Sendable {
    func now() -> MonotonicInstant
    /// Returns once `instant` has come; throws `CancellationError` when the task is cancelled.
    func sleep(until instant: MonotonicInstant) async throws
}

/// `MonotonicClock` as an `OpeningClock`.
public struct SystemOpeningClock: OpeningClock {
    public init() {}

    public func now() -> MonotonicInstant {
        MonotonicClock.now()
    }

    public func sleep(until instant: MonotonicInstant) async throws {
        try await Task.sleep(for: instant.duration(since: MonotonicClock.now()))
    }
}
