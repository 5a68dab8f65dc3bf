import Testing
@testable import GateCore

/// A clock the test moves by hand: every event is stamped with an instant the test chose.
struct TestClock {
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)

    mutating func advance(_ duration: Duration) -> MonotonicInstant {
        now = now + duration
        return now
    }
}

private let udpOnly = [OpeningMachine.PlannedAdapter(kind: .udp, budget: .seconds(2))]
private let udpThenMQTT = udpOnly + [OpeningMachine.PlannedAdapter(kind: .mqtt, budget: .seconds(5))]

private func finished(_ actions: [OpeningMachine.Action]) -> (OpeningResult, MonotonicInstant?)? {
    for action in actions {
        if case .finished(let result, let resetAt) = action { return (result, resetAt) }
    }
    return nil
}

private func started(_ actions: [OpeningMachine.Action]) -> [AdapterKind] {
    actions.compactMap { if case .startAdapter(let kind, _) = $0 { return kind } else { return nil } }
}

@Suite("Complete-cycle state machine")
struct OpeningMachineTests {
    @Test("1 then 0 within the budget is a confirmed cycle")
    func success() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        let start = clock.now
        let first = machine.handle(.start(at: start))
        #expect(first == [.startAdapter(.udp, deadline: start + .seconds(2)), .stateChanged(.triggering, adapter: .udp)])
        #expect(machine.state == .triggering)
        #expect(machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1)))) == [])
        let activated = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(10))))
        #expect(activated == [.stateChanged(.waitingForRelayClose, adapter: .udp)])
        #expect(machine.state == .waitingForRelayClose)
        let released = machine.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(400))))
        let (result, resetAt) = try #require(finished(released))
        #expect(released.first == .stopAdapter(.udp))
        #expect(released.contains(.stateChanged(.ready, adapter: .udp)))
        #expect(result.error == nil)
        #expect(result.outcome == .success)
        #expect(result.exitCode == 0)
        #expect(result.adapter == .udp)
        #expect(result.duration == .milliseconds(411))
        #expect(resetAt == nil)
        #expect(result.attempts == [AttemptRecord(adapter: .udp, outcome: .success, reason: nil, duration: .milliseconds(411))])
        #expect(result.message.contains("relay cycle confirmed"))
        #expect(!result.message.contains("gate opened"))
        #expect(started(released).isEmpty, "MQTT must not start after a UDP success")
    }

    @Test("No answer within the UDP budget falls back to MQTT with its own budget")
    func noAnswerFallsBack() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.now))
        let atDeadline = clock.advance(.seconds(2))
        let actions = machine.handle(.adapter(.udp, .deadlineReached, at: atDeadline))
        #expect(actions == [
            .stopAdapter(.udp),
            .startAdapter(.mqtt, deadline: atDeadline + .seconds(5)),
            .stateChanged(.triggering, adapter: .mqtt),
        ])
        #expect(machine.attempts.first?.outcome == .noAnswer)
        #expect(machine.attempts.first?.reason == "no answer within 2000 ms" || machine.attempts.first?.reason == "no answer within 2.0 s")
        _ = machine.handle(.adapter(.mqtt, .relay(.activated), at: clock.advance(.milliseconds(300))))
        let done = machine.handle(.adapter(.mqtt, .relay(.released), at: clock.advance(.milliseconds(400))))
        let (result, _) = try #require(finished(done))
        #expect(result.adapter == .mqtt)
        #expect(result.attempts.map(\.outcome) == [.noAnswer, .success])
        #expect(result.duration == .milliseconds(2700))
    }

    @Test("No answer and nothing to fall back to: allAdaptersFailed, then ready after the reset delay")
    func noAnswerUDPOnly() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        let (result, resetAt) = try #require(finished(actions))
        #expect(result.error == .allAdaptersFailed)
        #expect(result.exitCode == 69)
        #expect(result.adapter == nil)
        #expect(actions.contains(.stateChanged(.error, adapter: nil)))
        #expect(machine.state == .error)
        #expect(resetAt == clock.now + .seconds(3))
        #expect(machine.handle(.resetDelayElapsed(at: clock.advance(.seconds(1)))) == [], "too early")
        #expect(machine.state == .error)
        #expect(machine.handle(.resetDelayElapsed(at: clock.advance(.seconds(2)))) == [.stateChanged(.ready, adapter: nil)])
        #expect(machine.state == .ready)
    }

    @Test("1 without 0 is operationTimeout and never falls back")
    func activatedWithoutRelease() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(5))))
        let actions = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.milliseconds(1995))))
        let (result, resetAt) = try #require(finished(actions))
        #expect(started(actions).isEmpty, "the relay was seen on: a second trigger is forbidden")
        #expect(result.error == .operationTimeout)
        #expect(result.outcome == .timeout)
        #expect(result.exitCode == 124)
        #expect(result.adapter == .udp)
        #expect(machine.state == .timeout)
        #expect(actions.contains(.stateChanged(.timeout, adapter: .udp)))
        #expect(resetAt == clock.now + .seconds(3))
    }

    @Test("Garbage is invalidResponse and never falls back")
    func garbage() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(.adapter(.udp, .invalid("byte 0x7f"), at: clock.advance(.milliseconds(3))))
        let (result, _) = try #require(finished(actions))
        #expect(started(actions).isEmpty)
        #expect(result.error == .invalidResponse)
        #expect(result.exitCode == 76)
        #expect(result.attempts.map(\.outcome) == [.invalidResponse, .skipped])
        #expect(result.attempts[1].reason?.contains("second trigger") == true)
        #expect(machine.state == .error)
    }

    @Test("Garbage after the 1 is still invalidResponse")
    func garbageWhileWaiting() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(3))))
        let (result, _) = try #require(finished(machine.handle(.adapter(.udp, .invalid("byte 0x02"), at: clock.advance(.milliseconds(3))))))
        #expect(result.error == .invalidResponse)
    }

    @Test("Duplicated answers: a repeated 1 is harmless, bytes after the 0 are ignored")
    func duplicates() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        #expect(machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(3)))).count == 1)
        #expect(machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(1)))) == [])
        let done = machine.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(400))))
        #expect(try #require(finished(done)).0.error == nil)
        #expect(machine.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(1)))) == [])
        #expect(machine.handle(.adapter(.udp, .invalid("late"), at: clock.advance(.milliseconds(1)))) == [])
        #expect(machine.state == .ready)
    }

    @Test("0 before 1 is invalidResponse: something came back, so no fallback")
    func releaseBeforeActivation() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(3))))
        let (result, _) = try #require(finished(actions))
        #expect(started(actions).isEmpty)
        #expect(result.error == .invalidResponse)
        #expect(result.message.contains("before the activation"))
    }

    @Test("A byte stamped after the budget counts as no answer; later bytes change nothing")
    func lateByteAfterBudget() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        let start = clock.now
        _ = machine.handle(.start(at: start))
        let late = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(2001))))
        let (result, _) = try #require(finished(late))
        #expect(result.error == .allAdaptersFailed)
        #expect(result.attempts.first?.outcome == .noAnswer)
        #expect(result.duration == .seconds(2), "decided at the deadline, not when the late byte came")
        #expect(machine.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(1)))) == [])
    }

    @Test("A release stamped after the budget is a timeout, not a success")
    func lateReleaseAfterBudget() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(100))))
        let late = machine.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(3000))))
        #expect(try #require(finished(late)).0.error == .operationTimeout)
    }

    @Test("An adapter's own failure reported at the deadline keeps its words")
    func failureAtDeadlineKeepsReason() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(.adapter(.udp, .unreachable("no CONNACK within the budget"), at: clock.advance(.milliseconds(2001))))
        let (result, _) = try #require(finished(actions))
        #expect(result.attempts.first?.outcome == .unreachable)
        #expect(result.attempts.first?.reason == "no CONNACK within the budget")
    }

    @Test("Unreachable at once falls back to MQTT immediately")
    func unreachableFallsBack() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(.adapter(.udp, .unreachable("ICMP port unreachable"), at: clock.advance(.milliseconds(1))))
        #expect(started(actions) == [.mqtt])
        #expect(machine.attempts.first == AttemptRecord(adapter: .udp, outcome: .unreachable, reason: "ICMP port unreachable", duration: .milliseconds(1)))
    }

    @Test("A link failure after the 1 is a timeout without fallback")
    func unreachableAfterActivation() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(1))))
        let actions = machine.handle(.adapter(.udp, .unreachable("recvfrom: Network is down"), at: clock.advance(.milliseconds(1))))
        #expect(started(actions).isEmpty)
        #expect(try #require(finished(actions)).0.error == .operationTimeout)
    }

    @Test("Events from an adapter that is not running are ignored")
    func foreignAdapterIgnored() {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        #expect(machine.handle(.adapter(.mqtt, .relay(.activated), at: clock.advance(.milliseconds(1)))) == [])
        #expect(machine.handle(.adapter(.mqtt, .relay(.released), at: clock.advance(.milliseconds(1)))) == [])
        #expect(machine.state == .triggering)
    }

    @Test("A second start is ignored")
    func doubleStart() {
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: MonotonicInstant(nanoseconds: 1)))
        #expect(machine.handle(.start(at: MonotonicInstant(nanoseconds: 2))) == [])
    }

    @Test("Forced UDP that fails before any answer is udpConnectionFailed (69)")
    func forcedUDP() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3), forced: .udp)
        _ = machine.handle(.start(at: clock.now))
        let (result, _) = try #require(finished(machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))))
        #expect(result.error == .udpConnectionFailed)
        #expect(result.exitCode == 69)
    }

    @Test("Forced MQTT that cannot run as configured is configurationMissing (78)")
    func forcedMQTTMisconfigured() throws {
        var clock = TestClock()
        let plan = [OpeningMachine.PlannedAdapter(kind: .mqtt, budget: .seconds(5))]
        var machine = OpeningMachine(plan: plan, resetDelay: .seconds(3), forced: .mqtt)
        _ = machine.handle(.start(at: clock.now))
        let (result, _) = try #require(finished(machine.handle(.adapter(.mqtt, .misconfigured("no password"), at: clock.advance(.milliseconds(1))))))
        #expect(result.error == .configurationMissing)
        #expect(result.exitCode == 78)
    }

    @Test("In auto, a misconfigured MQTT is one reason among the others")
    func autoMisconfigured() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        let (result, _) = try #require(finished(machine.handle(.adapter(.mqtt, .misconfigured("no password"), at: clock.advance(.milliseconds(1))))))
        #expect(result.error == .allAdaptersFailed)
        #expect(result.message.contains("udp: no answer"))
        #expect(result.message.contains("mqtt: no password"))
    }

    @Test("Nothing planned: allAdaptersFailed at once with the skipped reasons")
    func nothingPlanned() throws {
        let skipped = [AttemptRecord(adapter: .udp, outcome: .skipped, reason: "off-link", duration: nil)]
        var machine = OpeningMachine(plan: [], skipped: skipped, resetDelay: .seconds(3))
        let actions = machine.handle(.start(at: MonotonicInstant(nanoseconds: 5)))
        let (result, _) = try #require(finished(actions))
        #expect(result.error == .allAdaptersFailed)
        #expect(result.attempts == skipped)
        #expect(result.message.contains("off-link"))
    }
}
