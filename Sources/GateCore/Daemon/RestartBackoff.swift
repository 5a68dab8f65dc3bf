/// When a failed part of the daemon (the button's line or FIFO, a service) is started
/// again (docs/CONTRACT.md#gate-daemon): 1 s after its first failure, then twice as long
/// after each further one, at most 30 s; a part that then ran `healthyAfter` without
/// failing starts over at 1 s. A value type: events with their instants in, the restart's
/// instant out; the service does the waiting and the I/O.
public struct RestartBackoff: Sendable, Equatable {
    public static let first: Duration = .seconds(1)
    public static let maximum: Duration = .seconds(30)
    /// How long a part must run for its next failure to count as a first one again.
    public static let healthyAfter: Duration = .seconds(60)

    public enum Event: Sendable {
        /// The part was started (or started again) at this instant.
        case started(at: MonotonicInstant)
        /// The part failed at this instant.
        case failed(at: MonotonicInstant)
    }

    public enum Action: Sendable, Equatable {
        /// Start the part again at `at`, `after` the failure; `failures` in a row so far.
        case restart(at: MonotonicInstant, after: Duration, failures: Int)
    }

    private var startedAt: MonotonicInstant?
    private var delay: Duration?
    /// Failures in a row: without `healthyAfter` of running between them.
    public private(set) var failures = 0

    public init() {}

    public mutating func handle(_ event: Event) -> Action? {
        switch event {
        case .started(let at):
            startedAt = at
            return nil
        case .failed(let now):
            if let startedAt, now.duration(since: startedAt) >= Self.healthyAfter {
                failures = 0
                delay = nil
            }
            let next = delay.map { min($0 * 2, Self.maximum) } ?? Self.first
            delay = next
            failures += 1
            return .restart(at: now + next, after: next, failures: failures)
        }
    }
}
