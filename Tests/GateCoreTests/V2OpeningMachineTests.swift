import Testing

@testable import GateCore

private let udpThenMQTT = [
    OpeningMachine.PlannedAdapter(kind: .udp, budget: .seconds(2)),
    OpeningMachine.PlannedAdapter(kind: .mqtt, budget: .seconds(5)),
]

private func result(_ actions: [V2OpeningMachine.Action]) -> OpeningResult? {
    for action in actions {
        if case .finished(let result, _) = action { return result }
    }
    return nil
}

private func starts(_ actions: [V2OpeningMachine.Action]) -> [V2OpeningMachine.Frame] {
    actions.compactMap { if case .startAdapter(_, let frame, _) = $0 { return frame } else { return nil } }
}

/// One rule of docs/CONTRACT.md#protocol-v2-openings per test, with invented instants.
/// A machine and the hand-moved clock its events are stamped with.
private struct Run {
    var clock = TestClock()
    var machine = V2OpeningMachine(plan: udpThenMQTT, resetDelay: .seconds(3))

    mutating func on(_ kind: AdapterKind, _ event: AdapterEvent) -> [V2OpeningMachine.Action] {
        machine.handle(.adapter(kind, event, at: clock.advance(.milliseconds(10))))
    }
}

@Suite("Protocol v2 opening machine")
struct V2OpeningMachineTests {
    @Test("A known epoch: one new frame; signed 0x90 then 0x91 is the success")
    func success() {
        var run = Run()
        let step1 = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        #expect(starts(step1) == [.new(epoch: 7)])
        let step2 = run.on(.udp, .sent)
        #expect(step2 == [.stateChanged(.triggering, adapter: .udp)])
        _ = run.on(.udp, .signed(.relayOn, epoch: 7))
        let done = result(run.on(.udp, .signed(.relayOff, epoch: 7)))
        #expect(done?.error == nil && done?.adapter == .udp)
    }

    @Test("No epoch known: a status query first, then the frame where it was answered")
    func queryFirst() {
        var run = Run()
        let first = run.machine.handle(.start(epoch: nil, at: run.clock.now))
        #expect(first == [.queryEpoch(.udp, deadline: run.clock.now + .seconds(2))])
        let unknown = run.machine.handle(.epochUnknown("silence", at: run.clock.advance(.seconds(2))))
        #expect(unknown == [.queryEpoch(.mqtt, deadline: run.clock.now + .seconds(5))])
        let learnt = run.machine.handle(.epochLearnt(9, at: run.clock.advance(.milliseconds(5))))
        #expect(learnt == [.startAdapter(.mqtt, frame: .new(epoch: 9), deadline: run.clock.now + .seconds(5))])
    }

    @Test("No epoch anywhere: 69, nothing moved")
    func noEpoch() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: nil, at: run.clock.now))
        _ = run.machine.handle(.epochUnknown("silence", at: run.clock.advance(.seconds(2))))
        let done = result(run.machine.handle(.epochUnknown("no link", at: run.clock.advance(.seconds(1)))))
        #expect(done?.error == .allAdaptersFailed && done?.exitCode == 69)
    }

    @Test("Silence after the frame: the same frame on the next transport, never a new one")
    func fallbackSameFrame() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        _ = run.on(.udp, .sent)
        _ = run.on(.udp, .signed(.relayOn, epoch: 7))
        // 0x91 lost: even after a 0x90 the same frame may go again.
        let step3 = run.on(.udp, .deadlineReached)
        #expect(starts(step3) == [.same])
        _ = run.on(.mqtt, .sent)
        _ = run.on(.mqtt, .signed(.relayOn, epoch: 7))
        let step4 = run.on(.mqtt, .signed(.relayOff, epoch: 7))
        #expect(result(step4)?.adapter == .mqtt)
    }

    @Test("Unsigned status (a plain 1/0, garbage) is never evidence")
    func plainIsNothing() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        _ = run.on(.udp, .sent)
        let step5 = run.on(.udp, .relay(.activated))
        #expect(step5.isEmpty)
        let step6 = run.on(.udp, .relay(.released))
        #expect(step6.isEmpty)
        let step7 = run.on(.udp, .invalid(.emptyDatagram))
        #expect(step7.isEmpty)
        let step8 = run.on(.udp, .signed(.relayOff, epoch: 7))
        #expect(step8.isEmpty, "a 0x91 alone confirms nothing")
        _ = run.on(.udp, .deadlineReached)
        _ = run.on(.mqtt, .sent)
        let done = result(run.on(.mqtt, .deadlineReached))
        #expect(done?.exitCode == 124, "a frame left: the relay may have cycled")
    }

    @Test("0x93: 75, no other transport")
    func busy() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        _ = run.on(.udp, .sent)
        let done = result(run.on(.udp, .signed(.busy, epoch: 7)))
        #expect(done?.error == .operationInProgress && done?.exitCode == 75)
        #expect(done?.attempts.map(\.adapter) == [.udp])
    }

    @Test("0x9E to the only copy: one new frame with its epoch; a second 0x9E: 69")
    func staleEpochOnce() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        _ = run.on(.udp, .sent)
        let step9 = run.on(.udp, .signed(.staleEpoch, epoch: 8))
        #expect(starts(step9) == [.new(epoch: 8)])
        let step10 = run.on(.udp, .sent)
        #expect(step10.isEmpty, "triggering was announced once")
        let done = result(run.on(.udp, .signed(.staleEpoch, epoch: 9)))
        #expect(done?.exitCode == 69, "nothing moved")
        #expect(done?.attempts.map(\.reason) == [.staleEpochRetried, .staleEpochAgain])
    }

    @Test("0x9E after another copy went unanswered: no new frame, 124")
    func staleEpochAfterTwoCopies() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        _ = run.on(.udp, .sent)
        _ = run.on(.udp, .deadlineReached)
        _ = run.on(.mqtt, .sent)
        let actions = run.on(.mqtt, .signed(.staleEpoch, epoch: 8))
        #expect(starts(actions).isEmpty)
        #expect(result(actions)?.exitCode == 124)
    }

    @Test("0x9E to the MQTT copy after the network refused the UDP one: the retry still goes")
    func staleEpochAfterRefusedCopy() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        _ = run.on(.udp, .sent)
        _ = run.on(.udp, .unreachable("ICMP port unreachable"))
        _ = run.on(.mqtt, .sent)
        let retry = run.on(.mqtt, .signed(.staleEpoch, epoch: 8))
        #expect(starts(retry) == [.new(epoch: 8)])
    }

    @Test("Refused by the network before any answer: 69 once the plan is over")
    func unreachable() {
        var run = Run()
        _ = run.machine.handle(.start(epoch: 7, at: run.clock.now))
        _ = run.on(.udp, .sent)
        let step11 = run.on(.udp, .unreachable("ICMP port unreachable"))
        #expect(starts(step11) == [.same])
        let done = result(run.on(.mqtt, .unreachable("the link is down")))
        #expect(done?.exitCode == 69)
    }
}
