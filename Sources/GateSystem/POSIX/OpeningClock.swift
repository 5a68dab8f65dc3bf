import GateCore

/// The clock an opening's deadlines, timers and event stamps use: CLOCK_MONOTONIC
/// in gate, one the test moves by hand in the pipeline's own tests.
public protocol OpeningClock: Sendable {
    func now() -> MonotonicInstant
    /// Returns once `instant` has come; throws `CancellationError` when the task is cancelled.
    func sleep(until instant: MonotonicInstant) async throws
}
