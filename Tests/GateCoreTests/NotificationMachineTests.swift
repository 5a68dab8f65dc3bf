import GateNotifications
import Testing

@testable import GateCore

private func busy(
    _ source: String,
    pid: Int32 = 100,
    state: GateState = .waitingForRelayClose,
    last: StatusRecord.Last? = nil
) -> StatusRecord {
    StatusRecord(
        state: state,
        since: "2026-11-26T04:00:00.000Z",
        source: source,
        pid: pid,
        adapter: "udp",
        resetAt: nil,
        last: last
    )
}

private func done(
    _ source: String,
    _ outcome: StatusRecord.LastOutcome = .success,
    error: String? = nil,
    at: String = "2026-11-26T04:00:01.000Z"
) -> StatusRecord.Last {
    StatusRecord.Last(outcome: outcome, error: error, adapter: "udp", durationMs: 412, finishedAt: at, source: source)
}

private func ready(_ last: StatusRecord.Last?) -> StatusRecord {
    StatusRecord(
        state: .ready,
        since: last?.finishedAt ?? "2026-11-26T03:00:00.000Z",
        source: nil,
        pid: nil,
        adapter: nil,
        resetAt: nil,
        last: last
    )
}

/// The instant of every observation unless a test moves on.
private let t0 = MonotonicInstant(nanoseconds: 1_000_000_000_000)

private func notices(_ actions: [NotificationMachine.Action]) -> [NotificationMachine.Notice] {
    actions.compactMap { action in
        switch action {
        case .show(let notice): notice
        case .heldBack: nil
        }
    }
}

@Suite("Desktop notifications: which openings, which words, replacing which (docs/CONTRACT.md#desktop)")
struct NotificationMachineTests {
    @Test func anOpeningByOthersIsOneNotificationReplacedByItsEnd() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        let start = notices(machine.handle(.observed(busy("button", state: .triggering), at: t0)))
        #expect(start.map(\.summary) == ["Gate: opening (button)…"])
        #expect(start.first?.replaces == 0)
        #expect(machine.handle(.shown(id: 7)).isEmpty)
        // Its next state is the same opening: no second notice.
        #expect(machine.handle(.observed(busy("button"), at: t0)).isEmpty)
        let end = notices(machine.handle(.observed(ready(done("button")), at: t0)))
        #expect(end.count == 1)
        #expect(end.first?.summary == "Gate: relay cycle confirmed (udp, 412 ms)")
        #expect(end.first?.replaces == 7)
        #expect(end.first?.summary.contains("opened") == false)
    }

    @Test func ownSuccessfulOpeningsAreNotNotified() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        #expect(machine.handle(.observed(busy("cli"), at: t0)).isEmpty)
        #expect(machine.handle(.observed(ready(done("cli")), at: t0)).isEmpty)
        #expect(machine.handle(.observed(busy("widget", pid: 101), at: t0)).isEmpty)
        #expect(machine.handle(.observed(ready(done("widget", at: "2026-11-26T04:00:05.000Z")), at: t0)).isEmpty)
    }

    @Test func ownFailedOpeningsAreNotifiedInWords() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        #expect(machine.handle(.observed(busy("cli"), at: t0)).isEmpty)
        let end = notices(machine.handle(.observed(ready(done("cli", .error, error: "allAdaptersFailed")), at: t0)))
        #expect(end.map(\.summary) == ["Gate: opening failed (cli)"])
        #expect(end.first?.body == "no adapter reached the ESP32 (via udp, 412 ms)")
        #expect(end.first?.urgency == .critical)
        #expect(end.first?.replaces == 0)
    }

    @Test func everyOpeningNotifiesOwnOpeningsToo() {
        var machine = NotificationMachine(settings: NotifyConfig(everyOpening: true), current: ready(nil))
        #expect(notices(machine.handle(.observed(busy("cli"), at: t0))).map(\.summary) == ["Gate: opening (cli)…"])
        _ = machine.handle(.shown(id: 3))
        #expect(notices(machine.handle(.observed(ready(done("cli")), at: t0))).map(\.replaces) == [3])
    }

    @Test func aReloadChangesWhatIsNotified() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        _ = machine.handle(.settings(NotifyConfig(everyOpening: true)))
        #expect(notices(machine.handle(.observed(busy("cli"), at: t0))).count == 1)
    }

    @Test func anOpeningSeenOnlyAtItsEndIsStillOneNotification() {
        // Two writes between two reads: the busy record was never seen.
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        let end = notices(machine.handle(.observed(ready(done("elsewhere")), at: t0)))
        #expect(end.count == 1)
        #expect(end.first?.replaces == 0)
    }

    @Test func aBurstOfElsewhereCyclesIsAtMostOneNotificationPerOpening() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        var shown = 0
        var ids = Set<UInt32>()
        var nextID: UInt32 = 1
        for cycle in 0..<20 {
            let finished = done("elsewhere", at: "2026-11-26T04:00:\(String(format: "%02d", cycle)).500Z")
            let previous =
                cycle == 0 ? nil : done("elsewhere", at: "2026-11-26T04:00:\(String(format: "%02d", cycle - 1)).500Z")
            // Each cycle writes its busy record several times and its end twice (the keeper's tidy).
            for record in [
                busy("elsewhere", pid: 9, last: previous), busy("elsewhere", pid: 9, last: previous), ready(finished),
                ready(finished),
            ] {
                // Real cycles, a cooldown apart: the budget never holds one back.
                let now = t0 + .seconds(Int64(cycle) * 15)
                for notice in notices(machine.handle(.observed(record, at: now))) {
                    shown += 1
                    if notice.replaces == 0 {
                        ids.insert(nextID)
                        _ = machine.handle(.shown(id: nextID))
                        nextID += 1
                    } else {
                        #expect(ids.contains(notice.replaces))
                        _ = machine.handle(.shown(id: notice.replaces))
                    }
                }
            }
        }
        #expect(ids.count == 20, "one notification per opening")
        #expect(shown == 40, "its start and its end")
    }

    @Test func whatHappenedBeforeTheStartIsNotNotified() {
        var machine = NotificationMachine(
            settings: NotifyConfig(),
            current: ready(done("button", .error, error: "operationTimeout"))
        )
        #expect(machine.handle(.observed(ready(done("button", .error, error: "operationTimeout")), at: t0)).isEmpty)
    }

    @Test func anOpeningInFlightAtTheStartIsNotifiedAtItsEndOnly() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: busy("button"))
        #expect(machine.handle(.observed(busy("button"), at: t0)).isEmpty)
        let end = notices(machine.handle(.observed(ready(done("button")), at: t0)))
        #expect(end.map(\.replaces) == [0])
    }

    @Test func aServerThatDidNotAnswerMakesTheEndANewNotification() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        _ = machine.handle(.observed(busy("homeassistant"), at: t0))
        _ = machine.handle(.notShown)
        #expect(notices(machine.handle(.observed(ready(done("homeassistant")), at: t0))).map(\.replaces) == [0])
    }

    @Test func timeoutsAndInterruptionsSayTheRelayMayHaveCycled() {
        var machine = NotificationMachine(settings: NotifyConfig(timeoutMilliseconds: 0), current: ready(nil))
        let timeout = notices(
            machine.handle(.observed(ready(done("button", .timeout, error: "operationTimeout")), at: t0))
        )
        #expect(timeout.first?.body.contains("the relay may have cycled") == true)
        #expect(timeout.first?.timeoutMilliseconds == 0)
        let interrupted = notices(
            machine.handle(.observed(ready(done("cli", .interrupted, at: "2026-11-26T04:00:09.000Z")), at: t0))
        )
        #expect(interrupted.map(\.summary) == ["Gate: opening interrupted (cli)"])
        #expect(interrupted.first?.body.contains("may have cycled") == true)
    }

    @Test func aNewOpenerWhileAnotherSeemedInFlightStartsItsOwnNotification() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        _ = machine.handle(.observed(busy("button", pid: 1), at: t0))
        _ = machine.handle(.shown(id: 4))
        let next = notices(machine.handle(.observed(busy("homeassistant", pid: 2), at: t0)))
        #expect(next.map(\.replaces) == [0])
        #expect(next.map(\.summary) == ["Gate: opening (homeassistant)…"])
    }

    // MARK: Issue 28, item 8: the status file is anyone's in group `gate`

    @Test func wordsFromTheStatusFileAreTextNotMarkup() {
        var machine = NotificationMachine(settings: NotifyConfig(everyOpening: true), current: ready(nil))
        let forged = StatusRecord.Last(
            outcome: .error,
            error: "<b>x</b>&#10;y",
            adapter: "<i>'\"",
            durationMs: 1,
            finishedAt: "2026-11-26T04:00:01.000Z",
            source: "<u>me</u>"
        )
        let failed = notices(machine.handle(.observed(ready(forged), at: t0)))
        #expect(failed.first?.body == "&lt;b&gt;x&lt;/b&gt;&amp;#10;y (via &lt;i&gt;&#39;&quot;, 1 ms)")
        var success = forged
        success.outcome = .success
        success.finishedAt = "2026-11-26T04:00:02.000Z"
        let succeeded = notices(machine.handle(.observed(ready(success), at: t0 + .seconds(1))))
        #expect(succeeded.first?.body == "source: &lt;u&gt;me&lt;/u&gt;")
        var forgedStart = busy("<b>", state: .triggering)
        forgedStart.adapter = "<i>&"
        let started = notices(machine.handle(.observed(forgedStart, at: t0 + .seconds(2))))
        #expect(started.first?.body == "trigger sent via &lt;i&gt;&amp;")
    }

    @Test func forgedOpeningsGetABoundedNumberOfNotifications() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        var new = 0
        var nextID: UInt32 = 1
        // 200 forged failures in 4 s, each a new `last` (what a group member can write).
        for index in 0..<200 {
            let at =
                "2026-11-26T04:00:\(String(format: "%02d", index / 50)).\(String(format: "%03d", index % 50 * 20))Z"
            let record = ready(done("cli", .error, error: "operationTimeout", at: at))
            for notice in notices(machine.handle(.observed(record, at: t0 + .milliseconds(20 * index)))) {
                if notice.replaces == 0 { new += 1 }
                _ = machine.handle(.shown(id: nextID))
                nextID += 1
            }
        }
        #expect(new == NotificationMachine.burst)
        #expect(nextID == UInt32(NotificationMachine.burst) + 1, "held-back notices are not shown")
        // Once the budget refills, the next one is shown and says what was held back.
        let later = ready(done("cli", .error, error: "operationTimeout", at: "2026-11-26T04:01:00.000Z"))
        let next = notices(machine.handle(.observed(later, at: t0 + .seconds(4) + NotificationMachine.refill)))
        #expect(next.count == 1)
        #expect(next.first?.body.contains("196 earlier notifications not shown") == true, "\(next)")
    }

    @Test func anOpeningEndingWhileTheNextBeginsLeavesEachItsOwnNotification() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        _ = machine.handle(.observed(busy("button", pid: 1), at: t0))
        _ = machine.handle(.shown(id: 1))
        // One read shows the button's end and Home Assistant's start.
        let both = notices(
            machine.handle(.observed(busy("homeassistant", pid: 2, last: done("button")), at: t0 + .seconds(1)))
        )
        #expect(both.map(\.replaces) == [1, 0])
        _ = machine.handle(.shown(id: 1))
        _ = machine.handle(.shown(id: 2))
        let end = notices(
            machine.handle(
                .observed(ready(done("homeassistant", at: "2026-11-26T04:00:03.000Z")), at: t0 + .seconds(2))
            )
        )
        #expect(end.map(\.replaces) == [2], "Home Assistant's end replaces its own start, not the button's end")
    }
}
