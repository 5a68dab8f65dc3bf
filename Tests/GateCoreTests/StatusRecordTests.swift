import Testing

@testable import GateCore

@Suite("Status file reader rules and cooldown")
struct StatusRecordTests {
    private let last = StatusRecord.Last(
        outcome: .success,
        error: nil,
        adapter: "udp",
        durationMs: 412,
        finishedAt: "2026-11-21T09:59:00.000Z",
        source: "cli"
    )

    @Test("timeout and error turn into ready once reset_at has passed", arguments: [GateState.timeout, .error])
    func resetAt(state: GateState) {
        let record = StatusRecord(
            state: state,
            since: "2026-11-21T10:00:00.000Z",
            source: "cli",
            pid: 7,
            adapter: "udp",
            resetAt: "2026-11-21T10:00:03.000Z",
            last: last
        )
        #expect(record.effective(now: "2026-11-21T10:00:02.999Z", lockHeld: false).state == state)
        let after = record.effective(now: "2026-11-21T10:00:03.000Z", lockHeld: false)
        #expect(after.state == .ready)
        #expect(after.since == "2026-11-21T10:00:03.000Z")
        #expect(after.resetAt == nil)
        #expect(after.last == last, "the last outcome stays visible")
    }

    @Test("A busy state whose lock is free was interrupted", arguments: [GateState.triggering, .waitingForRelayClose])
    func interrupted(state: GateState) {
        let record = StatusRecord(
            state: state,
            since: "2026-11-21T10:00:00.000Z",
            source: "widget",
            pid: 7,
            adapter: "mqtt",
            resetAt: nil,
            last: last
        )
        #expect(record.effective(now: "2026-11-21T10:00:01.000Z", lockHeld: true) == record)
        let shown = record.effective(now: "2026-11-21T10:00:01.000Z", lockHeld: false)
        #expect(shown.state == .ready)
        #expect(shown.last?.outcome == .interrupted)
        #expect(shown.last?.source == "widget")
        #expect(shown.last?.adapter == "mqtt")
    }

    @Test("ready is shown as it is")
    func ready() {
        let record = StatusRecord.initial(now: "2026-11-21T10:00:00.000Z")
        #expect(record.effective(now: "2027-01-01T00:00:00.000Z", lockHeld: false) == record)
    }

    @Test("The status JSON has the keys of docs/CONTRACT.md#runtime-files in order")
    func json() {
        let record = StatusRecord(
            state: .waitingForRelayClose,
            since: "2026-11-21T10:00:00.123Z",
            source: "cli",
            pid: 1234,
            adapter: "udp",
            resetAt: nil,
            last: nil
        )
        #expect(
            record.json.serialized() == """
                {"state":"waiting_for_relay_close","since":"2026-11-21T10:00:00.123Z","source":"cli","pid":1234,"adapter":"udp","reset_at":null,"last":null}
                """
        )
    }

    @Test("Cooldown: refused with the time left, clear after it, clear without a last end")
    func cooldown() {
        let end = MonotonicInstant(nanoseconds: 10_000_000_000)
        #expect(Cooldown.check(lastEnd: nil, now: end, cooldown: .seconds(2)) == .clear)
        #expect(
            Cooldown.check(lastEnd: end, now: end + .milliseconds(500), cooldown: .seconds(2))
                == .wait(.milliseconds(1500))
        )
        #expect(Cooldown.check(lastEnd: end, now: end + .seconds(2), cooldown: .seconds(2)) == .clear)
        #expect(Cooldown.check(lastEnd: end, now: end + .milliseconds(1), cooldown: .zero) == .clear)
        // A last end in the future: the clock started again (a reboot); no cooldown.
        #expect(Cooldown.check(lastEnd: end, now: MonotonicInstant(nanoseconds: 5), cooldown: .seconds(2)) == .clear)
    }

    @Test("The lock record names its holder")
    func holder() {
        #expect(
            LockRecord(pid: 42, source: "button", since: "2026-11-21T10:00:00.000Z", endedMonotonicNs: nil)
                .holderDescription
                == "pid 42 (button) since 2026-11-21T10:00:00.000Z"
        )
        #expect(
            LockRecord(pid: nil, source: nil, since: nil, endedMonotonicNs: 5).holderDescription == "another process"
        )
    }
}
