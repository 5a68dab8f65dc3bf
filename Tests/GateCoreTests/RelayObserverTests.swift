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
                .released(duration: .milliseconds(400))
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

    /// Echoes matched by count (docs/CONTRACT.md#gate-daemon, issue 28 item 12): before, any
    /// `1` within 1 s of a local opening's end was taken for its echo.
    @Test func aLocalOpeningThatSawItsCycleOwesNoEcho() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        #expect(observer.handle(.localOpeningEnded(owed: .none, at: at(0))) == [])
        // Another client's cycle 0.9 s later is someone else's, with its cooldown.
        #expect(
            observer.handle(.report(.activated, at: at(900), local: false)) == [
                .began(at: at(900)), .armTimer(at: at(5900)),
            ]
        )
    }

    @Test func anEchoIsCountedOffOnceThenCyclesAreElsewhere() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        let owed = RelayObserver.Echoes(activations: 1, releases: 1)
        #expect(observer.handle(.localOpeningEnded(owed: owed, at: at(0))) == [])
        #expect(observer.handle(.report(.activated, at: at(100), local: false)) == [.echo(.activated)])
        #expect(observer.handle(.report(.released, at: at(500), local: false)) == [.echo(.released)])
        #expect(observer.activeSince == nil)
        // A second `1` is beyond the one owed: someone else's.
        #expect(
            observer.handle(.report(.activated, at: at(700), local: false)) == [
                .began(at: at(700)), .armTimer(at: at(5700)),
            ]
        )
    }

    @Test func anOwedEchoThatNeverCameExpires() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        _ = observer.handle(.localOpeningEnded(owed: RelayObserver.Echoes(activations: 1, releases: 1), at: at(0)))
        let late = at(UInt64(RelayObserver.echoBound.milliseconds) + 1)
        #expect(
            observer.handle(.report(.activated, at: late, local: false)) == [
                .began(at: late), .armTimer(at: late + .seconds(5)),
            ]
        )
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
                .released(duration: .milliseconds(400))
            ]
        )
    }

    @Test func missingReleaseEndsAsTimeoutAtTheBudget() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        _ = observer.handle(.report(.activated, at: at(0), local: false))
        // A timer that fires early (a replaced one, say) asks again instead of ending.
        #expect(observer.handle(.timerFired(at: at(4000))) == [.armTimer(at: at(5000))])
        #expect(
            observer.handle(.timerFired(at: at(5001))) == [
                .unanswered(duration: .milliseconds(5001), began: at(0), repeats: 0)
            ]
        )
        #expect(observer.activeSince == nil)
        // The late `0` after the timeout belongs to nothing.
        #expect(observer.handle(.report(.released, at: at(6000), local: false)) == [])
    }

    /// The quiet-repeat rule, moved here from the daemon's link loop: a client publishing
    /// forged `1`s leaves one history line a minute, the others counted.
    @Test func unansweredRepeatsWithinTheQuietWindowStayOutOfTheHistory() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        func unanswered(from start: UInt64) -> [RelayObserver.Action] {
            _ = observer.handle(.report(.activated, at: at(start), local: false))
            return observer.handle(.timerFired(at: at(start + 5000)))
        }
        #expect(unanswered(from: 0) == [.unanswered(duration: .seconds(5), began: at(0), repeats: 0)])
        #expect(unanswered(from: 10_000) == [.unanswered(duration: .seconds(5), began: at(10_000), repeats: 1)])
        #expect(unanswered(from: 20_000) == [.unanswered(duration: .seconds(5), began: at(20_000), repeats: 2)])
        // A released cycle in between changes nothing of the count.
        _ = observer.handle(.report(.activated, at: at(30_000), local: false))
        #expect(
            observer.handle(.report(.released, at: at(30_400), local: false)) == [
                .released(duration: .milliseconds(400))
            ]
        )
        #expect(unanswered(from: 40_000) == [.unanswered(duration: .seconds(5), began: at(40_000), repeats: 3)])
        // The window counts from the one in the history (ended at 5 s): past it, recorded again.
        let late = 5000 + UInt64(RelayObserver.unansweredQuiet.milliseconds)
        #expect(unanswered(from: late) == [.unanswered(duration: .seconds(5), began: at(late), repeats: 0)])
        #expect(
            unanswered(from: late + 10_000) == [
                .unanswered(duration: .seconds(5), began: at(late + 10_000), repeats: 1)
            ]
        )
    }

    /// The echo rule's first half, moved here from the daemon's link loop: only a `1` while
    /// nothing is followed asks the lock whether a local opening owns it.
    @Test func onlyAnActivationWhileNothingIsFollowedBeginsACycle() {
        var observer = RelayObserver(releaseBudget: .seconds(5))
        #expect(observer.beginsCycle(.activated))
        #expect(!observer.beginsCycle(.released))
        #expect(!observer.beginsCycle(.invalid(.unexpectedByte(7))))
        _ = observer.handle(.report(.activated, at: at(0), local: false))
        #expect(!observer.beginsCycle(.activated))
        _ = observer.handle(.report(.released, at: at(400), local: false))
        #expect(observer.beginsCycle(.activated))
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
