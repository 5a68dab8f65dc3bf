import GateCore
import GateSystem
import GateTestSupport
import Synchronization
import Testing

/// The hand-moved clock the pipeline's tests rely on: if it woke a sleeper early or
/// never, every test built on it would mean nothing.
@Suite("ManualOpeningClock")
struct ManualOpeningClockTests {
    @Test("now() is where the test put it; sleep(until:) returns only once the clock got there")
    func sleepWaitsForTheTest() async throws {
        let clock = ManualOpeningClock(start: MonotonicInstant(nanoseconds: 1_000))
        let target = MonotonicInstant(nanoseconds: 5_000)
        let woke = Mutex(false)
        let sleeper = Task {
            try await clock.sleep(until: target)
            woke.withLock { $0 = true }
        }
        #expect(await eventually { clock.pendingWakeUps == [target] })
        clock.advance(to: MonotonicInstant(nanoseconds: 4_999))
        #expect(clock.now() == MonotonicInstant(nanoseconds: 4_999))
        #expect(clock.pendingWakeUps == [target], "woken before its instant")
        #expect(!woke.withLock { $0 })
        clock.advance(by: .nanoseconds(1))
        try await sleeper.value
        #expect(woke.withLock { $0 })
        #expect(clock.pendingWakeUps.isEmpty)
    }

    @Test("An instant already past returns at once; the clock never goes back")
    func pastInstants() async throws {
        let clock = ManualOpeningClock(start: MonotonicInstant(nanoseconds: 10_000))
        try await clock.sleep(until: MonotonicInstant(nanoseconds: 10_000))
        try await clock.sleep(until: MonotonicInstant(nanoseconds: 1))
        clock.advance(to: MonotonicInstant(nanoseconds: 5))
        #expect(clock.now() == MonotonicInstant(nanoseconds: 10_000))
    }

    @Test("A cancelled sleeper throws CancellationError, before or while it sleeps")
    func cancellation() async throws {
        let clock = ManualOpeningClock(start: MonotonicInstant(nanoseconds: 0))
        let sleeping = Task { try await clock.sleep(until: MonotonicInstant(nanoseconds: 1_000_000)) }
        #expect(await eventually { clock.pendingWakeUps.count == 1 })
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
        #expect(clock.pendingWakeUps.isEmpty)

        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: MonotonicInstant(nanoseconds: 1_000_000))
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
    }
}
