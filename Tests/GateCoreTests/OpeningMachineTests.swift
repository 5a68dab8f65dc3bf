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
        #expect(
            first == [.startAdapter(.udp, deadline: start + .seconds(2))],
            "nothing is announced before a trigger left"
        )
        #expect(machine.state == .ready)
        let sent = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        #expect(sent == [.stateChanged(.triggering, adapter: .udp)])
        #expect(machine.state == .triggering)
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
        #expect(
            result.attempts == [
                AttemptRecord(
                    adapter: .udp,
                    outcome: .success,
                    reason: nil,
                    duration: .milliseconds(411),
                    triggerSent: true
                )
            ]
        )
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
        #expect(
            actions == [.stopAdapter(.udp), .startAdapter(.mqtt, deadline: atDeadline + .seconds(5))]
        )
        #expect(machine.state == .triggering, "the UDP trigger's announcement stands while MQTT connects")
        let mqttSent = machine.handle(.adapter(.mqtt, .sent, at: clock.advance(.milliseconds(30))))
        #expect(mqttSent == [.stateChanged(.triggering, adapter: .mqtt)])
        #expect(machine.attempts.first?.outcome == .noAnswer)
        #expect(machine.attempts.first?.reason == .noAnswer(budget: .seconds(2)))
        #expect(machine.attempts.first?.triggerSent == true)
        _ = machine.handle(.adapter(.mqtt, .relay(.activated), at: clock.advance(.milliseconds(300))))
        let done = machine.handle(.adapter(.mqtt, .relay(.released), at: clock.advance(.milliseconds(400))))
        let (result, _) = try #require(finished(done))
        #expect(result.adapter == .mqtt)
        #expect(result.attempts.map(\.outcome) == [.noAnswer, .success])
        #expect(result.duration == .milliseconds(2730))
    }

    @Test("Silence after a trigger nobody watched for ends the opening (124); the next adapter never starts")
    func unwatchedSilenceNeverFallsBack() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        #expect(machine.handle(.unwatched) == [])
        let silent = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        #expect(started(silent) == [], "a fallback after unwatched silence")
        let (result, _) = try #require(finished(silent))
        #expect(result.exitCode == 124)
        #expect(result.adapter == .udp)
        #expect(result.attempts.map(\.adapter) == [.udp])
        #expect(result.attempts.first?.triggerSent == true)
    }

    @Test("A stop from outside: 124 once a trigger left, 69 when none did; never a fallback")
    func stoppedFromOutside() throws {
        for sentBefore in [true, false] {
            var clock = TestClock()
            var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
            _ = machine.handle(.start(at: clock.now))
            let stopped = machine.handle(.stopped(triggerSent: sentBefore, at: clock.advance(.milliseconds(5))))
            #expect(started(stopped) == [])
            let (result, _) = try #require(finished(stopped))
            #expect(result.exitCode == (sentBefore ? 124 : 69), "sent: \(sentBefore)")
            #expect(result.adapter == (sentBefore ? .udp : nil))
            #expect(result.attempts.first?.reason == .stopped)
        }
    }

    @Test("Nothing sent and nothing to fall back to: allAdaptersFailed (69), then ready after the reset delay")
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
        #expect(
            machine.handle(.resetDelayElapsed(at: clock.advance(.seconds(2)))) == [.stateChanged(.ready, adapter: nil)]
        )
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
        let actions = machine.handle(
            .adapter(.udp, .invalid(.unexpectedByte(0x7f)), at: clock.advance(.milliseconds(3)))
        )
        let (result, _) = try #require(finished(actions))
        #expect(started(actions).isEmpty)
        #expect(result.error == .invalidResponse)
        #expect(result.exitCode == 76)
        #expect(result.attempts.map(\.outcome) == [.invalidResponse], "nothing is listed after the deciding attempt")
        #expect(machine.state == .error)
    }

    @Test("Garbage after the 1 is still invalidResponse")
    func garbageWhileWaiting() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(3))))
        let (result, _) = try #require(
            finished(
                machine.handle(.adapter(.udp, .invalid(.unexpectedByte(0x02)), at: clock.advance(.milliseconds(3))))
            )
        )
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
        #expect(machine.handle(.adapter(.udp, .invalid(.emptyDatagram), at: clock.advance(.milliseconds(1)))) == [])
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

    @Test("A 1 read after the budget (a paused process) is evidence: timeout, never a fallback")
    func lateActivationIsEvidence() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        let late = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(2200))))
        let (result, _) = try #require(finished(late))
        #expect(started(late).isEmpty, "the ESP32 answered: MQTT must not fire")
        #expect(result.error == .operationTimeout)
        #expect(result.exitCode == 124)
        #expect(result.attempts.map(\.outcome) == [.timeout])
        #expect(result.attempts.first?.reason == .activatedAtDeadline(budget: .seconds(2)))
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
        let actions = machine.handle(
            .adapter(.udp, .unreachable("no CONNACK within the budget"), at: clock.advance(.milliseconds(2001)))
        )
        let (result, _) = try #require(finished(actions))
        #expect(result.attempts.first?.outcome == .unreachable)
        #expect(result.attempts.first?.reason == .adapter("no CONNACK within the budget"))
    }

    @Test("Unreachable at once falls back to MQTT immediately")
    func unreachableFallsBack() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(
            .adapter(.udp, .unreachable("ICMP port unreachable"), at: clock.advance(.milliseconds(1)))
        )
        #expect(started(actions) == [.mqtt])
        #expect(
            machine.attempts.first
                == AttemptRecord(
                    adapter: .udp,
                    outcome: .unreachable,
                    reason: .adapter("ICMP port unreachable"),
                    duration: .milliseconds(1)
                )
        )
    }

    @Test("A link failure after the 1 is a timeout without fallback")
    func unreachableAfterActivation() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(1))))
        let actions = machine.handle(
            .adapter(.udp, .unreachable("recvfrom: Network is down"), at: clock.advance(.milliseconds(1)))
        )
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
        #expect(machine.running == .udp)
    }

    @Test("A second start is ignored")
    func doubleStart() {
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: MonotonicInstant(nanoseconds: 1)))
        #expect(machine.handle(.start(at: MonotonicInstant(nanoseconds: 2))) == [])
    }

    @Test("Forced UDP that sent nothing before its deadline is udpConnectionFailed (69)")
    func forcedUDP() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3), forced: .udp)
        _ = machine.handle(.start(at: clock.now))
        let (result, _) = try #require(
            finished(
                machine.handle(
                    .adapter(
                        .udp,
                        .withheld(.budgetSpent(during: "resolving esp32.lan")),
                        at: clock.advance(.seconds(2))
                    )
                )
            )
        )
        #expect(result.error == .udpConnectionFailed)
        #expect(result.exitCode == 69)
        #expect(result.attempts.first?.triggerSent == false)
    }

    @Test("Forced UDP whose trigger left unanswered is operationTimeout (124): the relay may have cycled")
    func forcedUDPSentUnanswered() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3), forced: .udp)
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        let (result, _) = try #require(
            finished(machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2)))))
        )
        #expect(result.error == .operationTimeout)
        #expect(result.exitCode == 124)
        #expect(result.outcome == .timeout)
        #expect(result.adapter == .udp)
        #expect(result.attempts.map(\.outcome) == [.noAnswer])
        #expect(result.message.contains("may have cycled"))
    }

    @Test("Forced MQTT that cannot run as configured is configurationMissing (78)")
    func forcedMQTTMisconfigured() throws {
        var clock = TestClock()
        let plan = [OpeningMachine.PlannedAdapter(kind: .mqtt, budget: .seconds(5))]
        var machine = OpeningMachine(plan: plan, resetDelay: .seconds(3), forced: .mqtt)
        _ = machine.handle(.start(at: clock.now))
        let (result, _) = try #require(
            finished(
                machine.handle(.adapter(.mqtt, .misconfigured("no password"), at: clock.advance(.milliseconds(1))))
            )
        )
        #expect(result.error == .configurationMissing)
        #expect(result.exitCode == 78)
    }

    @Test("An attempt that sends nothing (a missing password) never announces triggering")
    func nothingSentNeverTriggering() throws {
        var clock = TestClock()
        let plan = [OpeningMachine.PlannedAdapter(kind: .mqtt, budget: .seconds(5))]
        var machine = OpeningMachine(plan: plan, resetDelay: .seconds(3))
        var actions = machine.handle(.start(at: clock.now))
        actions += machine.handle(.adapter(.mqtt, .misconfigured("no password"), at: clock.advance(.milliseconds(1))))
        let states = actions.compactMap { action -> GateState? in
            if case .stateChanged(let state, _) = action { return state } else { return nil }
        }
        #expect(states == [.error], "\(actions)")
        #expect(try #require(finished(actions)).0.attempts.map(\.triggerSent) == [false])
    }

    @Test("A repeated sent announces nothing more")
    func sentOnce() {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        #expect(machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1)))).count == 1)
        #expect(machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1)))) == [])
    }

    @Test("In auto, a misconfigured MQTT is one reason among the others")
    func autoMisconfigured() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .unreachable("ICMP port unreachable"), at: clock.advance(.milliseconds(2))))
        let (result, _) = try #require(
            finished(
                machine.handle(.adapter(.mqtt, .misconfigured("no password"), at: clock.advance(.milliseconds(1))))
            )
        )
        #expect(result.error == .allAdaptersFailed)
        #expect(result.message.contains("udp: ICMP port unreachable"))
        #expect(result.message.contains("mqtt: no password"))
    }

    @Test("Nothing planned: allAdaptersFailed at once with the skipped reasons")
    func nothingPlanned() throws {
        let skipped = [
            AttemptRecord(adapter: .udp, outcome: .skipped, reason: .offLink(host: "10.9.9.9"), duration: nil)
        ]
        var machine = OpeningMachine(plan: [], skipped: skipped, resetDelay: .seconds(3))
        let actions = machine.handle(.start(at: MonotonicInstant(nanoseconds: 5)))
        let (result, _) = try #require(finished(actions))
        #expect(result.error == .allAdaptersFailed)
        #expect(result.attempts == skipped)
        #expect(result.message.contains("not on a directly connected network"))
    }
}

/// docs/CONTRACT.md#evidence-and-time: each rule, with a hand-driven clock.
@Suite("Evidence and time")
struct EvidenceAndTimeTests {
    @Test("A 1 then 0 on the status topic after a UDP trigger confirms the cycle; MQTT never starts")
    func statusTopicConfirmsUDP() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        #expect(
            machine.handle(.observed(.activated, at: clock.advance(.milliseconds(30)))) == [
                .stateChanged(.waitingForRelayClose, adapter: .udp)
            ]
        )
        let done = machine.handle(.observed(.released, at: clock.advance(.milliseconds(400))))
        let (result, _) = try #require(finished(done))
        #expect(started(done).isEmpty)
        #expect(result.error == nil)
        #expect(result.adapter == .udp)
        #expect(
            result.attempts == [
                AttemptRecord(
                    adapter: .udp,
                    outcome: .success,
                    reason: nil,
                    duration: .milliseconds(431),
                    triggerSent: true
                )
            ]
        )
    }

    @Test("A 1 on the status topic then silence: the UDP deadline is a timeout (124), not a fallback")
    func statusTopicActivationBlocksFallback() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        _ = machine.handle(.observed(.activated, at: clock.advance(.milliseconds(30))))
        let actions = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        #expect(started(actions).isEmpty)
        #expect(try #require(finished(actions)).0.error == .operationTimeout)
    }

    @Test("A 0 alone on the status topic beside a UDP attempt changes nothing (another cycle's end)")
    func strayReleaseDuringUDP() {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        #expect(machine.handle(.observed(.released, at: clock.advance(.milliseconds(5)))) == [])
        #expect(machine.handle(.observed(.invalid(.emptyDatagram), at: clock.advance(.milliseconds(5)))) == [])
        #expect(machine.running == .udp)
    }

    @Test(
        "A lone 0 on the status topic after the UDP trigger is evidence: the deadline is 124, never a fallback; the UDP answer can still confirm"
    )
    func loneReleaseIsEvidence() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        _ = machine.handle(.observed(.released, at: clock.advance(.milliseconds(5))))
        let actions = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        let (result, _) = try #require(finished(actions))
        #expect(started(actions).isEmpty)
        #expect(result.exitCode == 124)
        #expect(result.attempts.first?.reason == .releaseWithoutActivation)

        var confirmed = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = confirmed.handle(.start(at: clock.now))
        _ = confirmed.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        _ = confirmed.handle(.observed(.released, at: clock.advance(.milliseconds(5))))
        _ = confirmed.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(5))))
        let (success, _) = try #require(
            finished(confirmed.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(400)))))
        )
        #expect(success.error == nil)
    }

    @Test("On the MQTT attempt, the status topic is the answer: 0 before 1 is invalidResponse")
    func statusTopicIsMQTTAnswer() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: [.init(kind: .mqtt, budget: .seconds(5))], resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.mqtt, .sent, at: clock.advance(.milliseconds(1))))
        let (result, _) = try #require(
            finished(machine.handle(.observed(.released, at: clock.advance(.milliseconds(5)))))
        )
        #expect(result.error == .invalidResponse)
    }

    @Test("A trigger published into silence is 124 with no_answer and trigger_sent, never 69")
    func silenceAfterPublish() throws {
        var clock = TestClock()
        var machine = OpeningMachine(
            plan: [.init(kind: .mqtt, budget: .seconds(5))],
            resetDelay: .seconds(3),
            forced: .mqtt
        )
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.mqtt, .sent, at: clock.advance(.milliseconds(3))))
        let (result, _) = try #require(
            finished(machine.handle(.adapter(.mqtt, .deadlineReached, at: clock.advance(.seconds(5)))))
        )
        #expect(result.exitCode == 124)
        #expect(result.error == .operationTimeout)
        #expect(
            result.attempts == [
                AttemptRecord(
                    adapter: .mqtt,
                    outcome: .noAnswer,
                    reason: .noAnswer(budget: .seconds(5)),
                    duration: .milliseconds(5003),
                    triggerSent: true
                )
            ]
        )
    }

    @Test("UDP unanswered, then MQTT fails to connect: 124, since the UDP trigger may have arrived")
    func udpUnansweredThenMQTTDown() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        _ = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        let (result, _) = try #require(
            finished(
                machine.handle(.adapter(.mqtt, .unreachable("Connection refused"), at: clock.advance(.milliseconds(1))))
            )
        )
        #expect(result.error == .operationTimeout)
        #expect(result.adapter == .udp)
        #expect(result.attempts.map(\.triggerSent) == [true, false])
    }

    @Test("Every trigger refused at once by the network (ICMP) is still 69: nothing can have arrived")
    func refusedSendsAre69() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpOnly, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        let (result, _) = try #require(
            finished(
                machine.handle(
                    .adapter(.udp, .unreachable("ICMP port unreachable"), at: clock.advance(.milliseconds(1)))
                )
            )
        )
        #expect(result.exitCode == 69)
        #expect(result.attempts.first?.triggerSent == true)
    }

    @Test("A link lost after the trigger left, without an answer: no_answer, fallback allowed, 124 at the end")
    func lostAfterTrigger() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: [.init(kind: .mqtt, budget: .seconds(5))], resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.mqtt, .sent, at: clock.advance(.milliseconds(1))))
        let (result, _) = try #require(
            finished(machine.handle(.adapter(.mqtt, .lost("broker gone"), at: clock.advance(.milliseconds(10)))))
        )
        #expect(result.exitCode == 124)
        #expect(result.attempts.first?.outcome == .noAnswer)
        #expect(result.attempts.first?.reason == .lostAfterTrigger("broker gone"))
    }

    @Test("A budget spent resolving sends nothing: the next adapter goes, and the opening can still succeed")
    func budgetSpentResolving() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(
            .adapter(.udp, .withheld(.budgetSpent(during: "resolving localhost")), at: clock.advance(.seconds(2)))
        )
        #expect(started(actions) == [.mqtt])
        _ = machine.handle(.adapter(.mqtt, .sent, at: clock.advance(.milliseconds(2))))
        _ = machine.handle(.observed(.activated, at: clock.advance(.milliseconds(5))))
        let (result, _) = try #require(
            finished(machine.handle(.observed(.released, at: clock.advance(.milliseconds(400)))))
        )
        #expect(result.error == nil)
        #expect(result.attempts.map(\.triggerSent) == [false, true])
        #expect(result.attempts.first?.reason?.description.contains("resolving localhost") == true)
    }

    @Test("A busy relay: nothing sent, operationInProgress (75), no other adapter")
    func busyRelay() throws {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        let actions = machine.handle(.adapter(.udp, .withheld(.relayActive), at: clock.advance(.milliseconds(1))))
        let (result, _) = try #require(finished(actions))
        #expect(started(actions).isEmpty)
        #expect(result.exitCode == 75)
        #expect(result.error == .operationInProgress)
        #expect(result.message.contains("the relay is active"))
        #expect(result.attempts.map(\.adapter) == [.udp])
    }

    @Test("Answered earlier: a permit closed by a 1 after an earlier trigger waits for that 1, it decides nothing")
    func relayAnswered() {
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        _ = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        #expect(machine.handle(.adapter(.mqtt, .withheld(.relayAnswered), at: clock.advance(.milliseconds(1)))) == [])
        #expect(
            machine.handle(.observed(.activated, at: clock.advance(.milliseconds(1)))) == [
                .stateChanged(.waitingForRelayClose, adapter: .udp)
            ]
        )
    }

    @Test("A late cycle after the fallback began is the UDP trigger's: success via udp, MQTT listed as sending nothing")
    func lateCycleBelongsToTheTriggerThatLeft() throws {
        // The explorer's edge: the ESP32's `1` reached the broker after the UDP budget and
        // the watch's sync, as the MQTT attempt began; the permit withheld MQTT's trigger.
        var clock = TestClock()
        var machine = OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        _ = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        _ = machine.handle(.adapter(.mqtt, .withheld(.relayAnswered), at: clock.advance(.milliseconds(5))))
        _ = machine.handle(.observed(.activated, at: clock.advance(.milliseconds(1))))
        let actions = machine.handle(.observed(.released, at: clock.advance(.milliseconds(400))))
        let (result, _) = try #require(finished(actions))
        #expect(result.error == nil)
        #expect(result.adapter == .udp)
        #expect(actions.contains(.stopAdapter(.mqtt)))
        #expect(result.attempts.map(\.adapter) == [.udp])
        #expect(result.attempts.first?.outcome == .success)
        #expect(result.attempts.first?.triggerSent == true)
        #expect(result.attempts.first?.duration == .milliseconds(2407))
        #expect(result.message.contains("via udp"), "\(result.message)")
    }

    @Test("After the relay answered an earlier trigger, a silent running attempt starts no other adapter: 124 via udp")
    func answeredThenSilentEndsWithTheTriggerThatLeft() throws {
        let plan: [OpeningMachine.PlannedAdapter] = [
            .init(kind: .udp, budget: .seconds(2)), .init(kind: .mqtt, budget: .seconds(5)),
            .init(kind: .udp, budget: .seconds(2)),
        ]
        var clock = TestClock()
        var machine = OpeningMachine(plan: plan, resetDelay: .seconds(3))
        _ = machine.handle(.start(at: clock.now))
        _ = machine.handle(.adapter(.udp, .sent, at: clock.advance(.milliseconds(1))))
        _ = machine.handle(.adapter(.udp, .deadlineReached, at: clock.advance(.seconds(2))))
        _ = machine.handle(.adapter(.mqtt, .withheld(.relayAnswered), at: clock.advance(.milliseconds(5))))
        let actions = machine.handle(.adapter(.mqtt, .deadlineReached, at: clock.advance(.seconds(5))))
        #expect(started(actions).isEmpty)
        let (result, _) = try #require(finished(actions))
        #expect(result.exitCode == 124)
        #expect(result.adapter == .udp)
    }

    @Test("The attempts list stops at the deciding attempt; skipped adapters before it stay")
    func attemptsStopAtDecision() throws {
        var clock = TestClock()
        let skippedUDP = [AttemptRecord(adapter: .udp, outcome: .skipped, reason: .notConfigured(.udp), duration: nil)]
        var mqttOnly = OpeningMachine(
            plan: [.init(kind: .mqtt, budget: .seconds(5))],
            skipped: skippedUDP,
            resetDelay: .seconds(3)
        )
        _ = mqttOnly.handle(.start(at: clock.now))
        _ = mqttOnly.handle(.adapter(.mqtt, .sent, at: clock.advance(.milliseconds(1))))
        _ = mqttOnly.handle(.observed(.activated, at: clock.advance(.milliseconds(5))))
        let (result, _) = try #require(
            finished(mqttOnly.handle(.observed(.released, at: clock.advance(.milliseconds(400)))))
        )
        #expect(result.attempts.map(\.adapter) == [.udp, .mqtt])
        #expect(result.attempts.last?.outcome == .success)

        let skippedMQTT = [
            AttemptRecord(adapter: .mqtt, outcome: .skipped, reason: .notConfigured(.mqtt), duration: nil)
        ]
        var udp = OpeningMachine(plan: udpOnly, skipped: skippedMQTT, resetDelay: .seconds(3))
        _ = udp.handle(.start(at: clock.now))
        _ = udp.handle(.adapter(.udp, .relay(.activated), at: clock.advance(.milliseconds(1))))
        let (success, _) = try #require(
            finished(udp.handle(.adapter(.udp, .relay(.released), at: clock.advance(.milliseconds(400)))))
        )
        #expect(success.attempts.map(\.adapter) == [.udp], "nothing after the successful adapter")
    }
}
