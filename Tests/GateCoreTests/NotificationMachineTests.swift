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

private func notices(_ actions: [NotificationMachine.Action]) -> [NotificationMachine.Notice] {
    actions.map { action in
        switch action {
        case .show(let notice): notice
        }
    }
}

@Suite("Desktop notifications: which openings, which words, replacing which (docs/CONTRACT.md#desktop)")
struct NotificationMachineTests {
    @Test func anOpeningByOthersIsOneNotificationReplacedByItsEnd() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        let start = notices(machine.handle(.observed(busy("button", state: .triggering))))
        #expect(start.map(\.summary) == ["Gate: opening (button)…"])
        #expect(start.first?.replaces == 0)
        #expect(machine.handle(.shown(id: 7)).isEmpty)
        // Its next state is the same opening: no second notice.
        #expect(machine.handle(.observed(busy("button"))).isEmpty)
        let end = notices(machine.handle(.observed(ready(done("button")))))
        #expect(end.count == 1)
        #expect(end.first?.summary == "Gate: relay cycle confirmed (udp, 412 ms)")
        #expect(end.first?.replaces == 7)
        #expect(end.first?.summary.contains("opened") == false)
    }

    @Test func ownSuccessfulOpeningsAreNotNotified() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        #expect(machine.handle(.observed(busy("cli"))).isEmpty)
        #expect(machine.handle(.observed(ready(done("cli")))).isEmpty)
        #expect(machine.handle(.observed(busy("widget", pid: 101))).isEmpty)
        #expect(machine.handle(.observed(ready(done("widget", at: "2026-11-26T04:00:05.000Z")))).isEmpty)
    }

    @Test func ownFailedOpeningsAreNotifiedInWords() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        #expect(machine.handle(.observed(busy("cli"))).isEmpty)
        let end = notices(machine.handle(.observed(ready(done("cli", .error, error: "allAdaptersFailed")))))
        #expect(end.map(\.summary) == ["Gate: opening failed (cli)"])
        #expect(end.first?.body == "no adapter reached the ESP32 (via udp, 412 ms)")
        #expect(end.first?.urgency == .critical)
        #expect(end.first?.replaces == 0)
    }

    @Test func everyOpeningNotifiesOwnOpeningsToo() {
        var machine = NotificationMachine(settings: NotifyConfig(everyOpening: true), current: ready(nil))
        #expect(notices(machine.handle(.observed(busy("cli")))).map(\.summary) == ["Gate: opening (cli)…"])
        _ = machine.handle(.shown(id: 3))
        #expect(notices(machine.handle(.observed(ready(done("cli"))))).map(\.replaces) == [3])
    }

    @Test func aReloadChangesWhatIsNotified() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        _ = machine.handle(.settings(NotifyConfig(everyOpening: true)))
        #expect(notices(machine.handle(.observed(busy("cli")))).count == 1)
    }

    @Test func anOpeningSeenOnlyAtItsEndIsStillOneNotification() {
        // Two writes between two reads: the busy record was never seen.
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        let end = notices(machine.handle(.observed(ready(done("elsewhere")))))
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
                for notice in notices(machine.handle(.observed(record))) {
                    shown += 1
                    if notice.replaces == 0 {
                        ids.insert(nextID)
                        _ = machine.handle(.shown(id: nextID))
                        nextID += 1
                    } else {
                        #expect(ids.contains(notice.replaces))
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
        #expect(machine.handle(.observed(ready(done("button", .error, error: "operationTimeout")))).isEmpty)
    }

    @Test func anOpeningInFlightAtTheStartIsNotifiedAtItsEndOnly() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: busy("button"))
        #expect(machine.handle(.observed(busy("button"))).isEmpty)
        let end = notices(machine.handle(.observed(ready(done("button")))))
        #expect(end.map(\.replaces) == [0])
    }

    @Test func aServerThatDidNotAnswerMakesTheEndANewNotification() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        _ = machine.handle(.observed(busy("homeassistant")))
        _ = machine.handle(.notShown)
        #expect(notices(machine.handle(.observed(ready(done("homeassistant"))))).map(\.replaces) == [0])
    }

    @Test func timeoutsAndInterruptionsSayTheRelayMayHaveCycled() {
        var machine = NotificationMachine(settings: NotifyConfig(timeoutMilliseconds: 0), current: ready(nil))
        let timeout = notices(machine.handle(.observed(ready(done("button", .timeout, error: "operationTimeout")))))
        #expect(timeout.first?.body.contains("the relay may have cycled") == true)
        #expect(timeout.first?.timeoutMilliseconds == 0)
        let interrupted = notices(
            machine.handle(.observed(ready(done("cli", .interrupted, at: "2026-11-26T04:00:09.000Z"))))
        )
        #expect(interrupted.map(\.summary) == ["Gate: opening interrupted (cli)"])
        #expect(interrupted.first?.body.contains("may have cycled") == true)
    }

    @Test func aNewOpenerWhileAnotherSeemedInFlightStartsItsOwnNotification() {
        var machine = NotificationMachine(settings: NotifyConfig(), current: ready(nil))
        _ = machine.handle(.observed(busy("button", pid: 1)))
        _ = machine.handle(.shown(id: 4))
        let next = notices(machine.handle(.observed(busy("homeassistant", pid: 2))))
        #expect(next.map(\.replaces) == [0])
        #expect(next.map(\.summary) == ["Gate: opening (homeassistant)…"])
    }
}
