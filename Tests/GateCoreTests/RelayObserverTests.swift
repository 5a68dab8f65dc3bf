import GateCore
import Testing

private func at(_ ms: UInt64) -> MonotonicInstant { MonotonicInstant(nanoseconds: 1_000_000_000 + ms * 1_000_000) }

@Suite struct RelayObserverTests {
    @Test func cycleCausedElsewhereIsFollowedToItsRelease() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        #expect(
            observer.handle(.report(.activated, at: at(0), local: false)) == [
                .began(at: at(0)), .armTimer(at: at(5000)),
            ]
        )
        #expect(observer.activeSince == at(0))
        #expect(
            observer.handle(.report(.released, at: at(400), local: false)) == [
                .ended(released: true, duration: .milliseconds(400))
            ]
        )
        #expect(observer.activeSince == nil)
        // The timer of the finished cycle fires late: nothing left to end.
        #expect(observer.handle(.timerFired(at: at(5000))) == [])
    }

    @Test func localOpeningsAreNotFollowed() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        #expect(observer.handle(.report(.activated, at: at(0), local: true)) == [])
        #expect(observer.handle(.report(.released, at: at(400), local: false)) == [])
        #expect(observer.activeSince == nil)
    }

    @Test func aLoneReleaseMeansNothing() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        #expect(observer.handle(.report(.released, at: at(10), local: false)) == [])
    }

    @Test func repeatedActivationIsHarmless() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        _ = observer.handle(.report(.activated, at: at(0), local: false))
        #expect(observer.handle(.report(.activated, at: at(100), local: false)) == [])
        #expect(
            observer.handle(.report(.released, at: at(400), local: false)) == [
                .ended(released: true, duration: .milliseconds(400))
            ]
        )
    }

    @Test func missingReleaseEndsAsTimeoutAtTheBudget() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        _ = observer.handle(.report(.activated, at: at(0), local: false))
        // A timer that fires early (a replaced one, say) asks again instead of ending.
        #expect(observer.handle(.timerFired(at: at(4000))) == [.armTimer(at: at(5000))])
        #expect(observer.handle(.timerFired(at: at(5001))) == [.ended(released: false, duration: .milliseconds(5001))])
        #expect(observer.activeSince == nil)
        // The late `0` after the timeout belongs to nothing.
        #expect(observer.handle(.report(.released, at: at(6000), local: false)) == [])
    }

    @Test func invalidPayloadIsReportedAndEndsNothing() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        _ = observer.handle(.report(.activated, at: at(0), local: false))
        #expect(
            observer.handle(.report(.invalid(.unexpectedByte(7)), at: at(100), local: false)) == [
                .ignoredInvalid(.unexpectedByte(7))
            ]
        )
        #expect(observer.activeSince == at(0))
    }

    @Test func reportsComeFromDecodedPayloads() {
        #expect(RelayObserver.report(for: MQTTStatusDecoder.event(for: Array(" 1\n".utf8), topic: "t")) == .activated)
        #expect(RelayObserver.report(for: MQTTStatusDecoder.event(for: Array("0".utf8), topic: "t")) == .released)
        if case .invalid = RelayObserver.report(for: MQTTStatusDecoder.event(for: Array("on".utf8), topic: "t")) {
        } else {
            Issue.record("a payload outside the protocol must be invalid")
        }
        #expect(RelayObserver.report(for: .sent) == nil)
    }
}
