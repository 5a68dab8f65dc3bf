import GateCore
import Plumbing

/// `CLOCK_MONOTONIC`, the clock every deadline is measured on: it does not jump
/// when NTP sets the time on a Pi that booted without a real-time clock.
public enum MonotonicClock {
    public static func now() -> MonotonicInstant {
        MonotonicInstant(nanoseconds: MonotonicNanoseconds.now())
    }
}
