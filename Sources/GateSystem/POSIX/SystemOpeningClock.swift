import GateCore

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
