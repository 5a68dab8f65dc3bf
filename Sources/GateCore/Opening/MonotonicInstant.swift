/// A point on a monotonic clock, in nanoseconds since an arbitrary origin.
///
/// The state machine only compares and offsets these, so tests can drive it
/// with invented instants while the system layer reads `CLOCK_MONOTONIC`.
public struct MonotonicInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        let delta = rhs.nanosecondsClamped
        if delta < 0 {
            let magnitude = UInt64(-delta)
            return MonotonicInstant(nanoseconds: lhs.nanoseconds >= magnitude ? lhs.nanoseconds - magnitude : 0)
        }
        let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(UInt64(delta))
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    /// The time from `earlier` to `self`; zero if `earlier` is later.
    public func duration(since earlier: MonotonicInstant) -> Duration {
        guard nanoseconds > earlier.nanoseconds else { return .zero }
        return .nanoseconds(Int64(clamping: nanoseconds - earlier.nanoseconds))
    }

    public var description: String { "\(nanoseconds)ns" }
}

extension Duration {
    /// Whole nanoseconds, saturating at the ends of `Int64`.
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (fromSeconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflow2) = fromSeconds.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return total
    }

    /// Whole milliseconds, rounded down, for JSON and logs.
    public var milliseconds: Int64 { nanosecondsClamped / 1_000_000 }

    /// A duration from seconds given as configuration (`2.0`, `0.25`).
    public static func seconds(fromConfig value: Double) -> Duration {
        .nanoseconds(Int64((value * 1_000_000_000).rounded()))
    }

    /// `412 ms`, `2.0 s`: the way durations are shown to people.
    public var humanReadable: String {
        let ms = milliseconds
        if ms < 10_000 && ms % 1000 != 0 || ms < 1000 { return "\(ms) ms" }
        let tenths = (ms + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
