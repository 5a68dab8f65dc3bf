import Testing

@testable import GateCore

private let t0 = MonotonicInstant(nanoseconds: 5_000_000_000)

@Suite("A failed part's restart: 1 s, doubling, at most 30 s (docs/CONTRACT.md#gate-daemon)")
struct RestartBackoffTests {
    @Test func delaysDoubleUpToThirtySeconds() {
        var backoff = RestartBackoff()
        _ = backoff.handle(.started(at: t0))
        var now = t0
        var delays: [Duration] = []
        for _ in 0..<7 {
            guard case .restart(let at, let after, _) = backoff.handle(.failed(at: now)) else {
                Issue.record("no restart")
                return
            }
            #expect(at == now + after)
            delays.append(after)
            now = at
            _ = backoff.handle(.started(at: now))
        }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
        #expect(backoff.failures == 7)
    }

    @Test func aPartThatRanLongEnoughStartsOverAtOneSecond() {
        var backoff = RestartBackoff()
        _ = backoff.handle(.started(at: t0))
        _ = backoff.handle(.failed(at: t0))
        _ = backoff.handle(.started(at: t0 + .seconds(1)))
        #expect(
            backoff.handle(.failed(at: t0 + .seconds(2)))
                == .restart(at: t0 + .seconds(4), after: .seconds(2), failures: 2)
        )
        _ = backoff.handle(.started(at: t0 + .seconds(4)))
        let later = t0 + .seconds(4) + RestartBackoff.healthyAfter
        #expect(
            backoff.handle(.failed(at: later)) == .restart(at: later + .seconds(1), after: .seconds(1), failures: 1)
        )
    }

    @Test func theReportIsOneLineAndSaysWhatHappens() {
        let failing = PartReport(part: "button", failures: 2, lastFailure: "EIO\non fd 7", restartIn: .seconds(2))
        #expect(failing.sentence == "button failed (2 failures in a row): EIO\\non fd 7; restarting in 2.0 s")
        let running = PartReport(part: "button", failures: 1, lastFailure: "EIO", restartIn: nil)
        #expect(running.sentence == "button restarted after 1 failure (last: EIO)")
    }
}
