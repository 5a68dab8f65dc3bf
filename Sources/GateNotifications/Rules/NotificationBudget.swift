import GateCore

/// How many new desktop notifications may appear (docs/CONTRACT.md#desktop): `capacity`
/// at once, then one more per `interval` (a token bucket). Anyone in group `gate` can
/// write the status file, so the number of "openings" it shows is theirs to choose;
/// the notifications they become must not be.
struct NotificationBudget: Sendable, Equatable {
    let capacity: Int
    let interval: Duration
    private var tokens: Int
    /// The instant up to which tokens were counted; nil before the first take.
    private var countedTo: MonotonicInstant?

    init(capacity: Int, interval: Duration) {
        self.capacity = capacity
        self.interval = interval
        self.tokens = capacity
    }

    /// Takes one token at `now` if there is one.
    mutating func take(at now: MonotonicInstant) -> Bool {
        refill(at: now)
        guard tokens > 0 else { return false }
        tokens -= 1
        return true
    }

    private mutating func refill(at now: MonotonicInstant) {
        // A full bucket earns nothing: its next token is counted from its first take.
        guard tokens < capacity, let since = countedTo, now > since else {
            if tokens == capacity { countedTo = now }
            return
        }
        let step = max(interval.nanosecondsClamped, 1)
        let earned = now.duration(since: since).nanosecondsClamped / step
        guard earned > 0 else { return }
        tokens = Int(min(Int64(capacity), Int64(tokens) + earned))
        // The part of an interval already run counts towards the next token.
        countedTo = since + .nanoseconds(earned * step)
    }
}
