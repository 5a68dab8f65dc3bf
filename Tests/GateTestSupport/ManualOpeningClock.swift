import GateCore
import GateSystem
import Synchronization

/// An `OpeningClock` that only the test moves: `now()` is the instant the test last set,
/// and `sleep(until:)` returns once the test has advanced the clock to that instant (or
/// past it), or throws `CancellationError` when its task is cancelled.
///
/// It starts at the real `CLOCK_MONOTONIC` reading of its creation (unless told
/// otherwise), so that the trigger's stamp it leaves in the lock file stays comparable
/// with the cooldown, which `OpeningRecorder` judges on the real clock. Moving it a few
/// seconds ahead is harmless as long as the test does not then look at a cooldown.
public final class ManualOpeningClock: OpeningClock {
    private struct Sleeper {
        let until: MonotonicInstant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: MonotonicInstant
        var sleepers: [Int: Sleeper] = [:]
        /// Sleepers cancelled before their continuation was stored.
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state: Mutex<State>

    public init(start: MonotonicInstant = MonotonicClock.now()) {
        state = Mutex(State(now: start))
    }

    public func now() -> MonotonicInstant {
        state.withLock { $0.now }
    }

    public func sleep(until instant: MonotonicInstant) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let verdict: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if instant <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(until: instant, continuation: continuation)
                    return nil
                }
                if let verdict { continuation.resume(with: verdict) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward by `duration` and wakes every sleeper whose instant has come.
    public func advance(by duration: Duration) {
        let target = now() + duration
        advance(to: target)
    }

    /// Moves the clock to `instant` (never backwards) and wakes every sleeper whose instant
    /// has come, earliest first.
    public func advance(to instant: MonotonicInstant) {
        let due = state.withLock { state -> [Sleeper] in
            if instant > state.now { state.now = instant }
            let now = state.now
            let due = state.sleepers.filter { $0.value.until <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.sorted { $0.until < $1.until }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// The instants that sleepers wait for now, earliest first.
    public var pendingWakeUps: [MonotonicInstant] {
        state.withLock { $0.sleepers.values.map(\.until).sorted() }
    }
}
