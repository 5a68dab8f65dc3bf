import GateCore
import Testing

/// Echoes are matched by count (docs/CONTRACT.md#gate-daemon): what an ended local opening
/// did not see of its cycle is counted off as it comes, within `RelayObserver.echoBound`.
@Suite struct EchoLedgerTests {
    private let end = MonotonicInstant(nanoseconds: 10_000_000_000)

    @Test func owedEchoesAreCountedOffOnceEach() {
        var ledger = EchoLedger()
        ledger.expect(.init(activations: 1, releases: 1), endedAt: end)
        let taken = [
            ledger.take(.activated, at: end + .milliseconds(300)),
            ledger.take(.activated, at: end + .milliseconds(400)),  // a second 1: someone else's
            ledger.take(.released, at: end + .milliseconds(500)),
            ledger.take(.released, at: end + .milliseconds(600)),
        ]
        #expect(taken == [true, false, true, false])
    }

    @Test func nothingOwedPastTheBoundOrWhenSeen() {
        var late = EchoLedger()
        late.expect(.init(activations: 1, releases: 1), endedAt: end)
        var seen = EchoLedger()
        seen.expect(.none, endedAt: end)
        var fresh = EchoLedger()  // no opening ended: nothing is an echo
        var invalid = EchoLedger()
        invalid.expect(.init(activations: 1, releases: 1), endedAt: end)
        let taken = [
            late.take(.activated, at: end + RelayObserver.echoBound),
            seen.take(.activated, at: end + .milliseconds(1)),
            fresh.take(.released, at: end),
            invalid.take(.invalid(.emptyDatagram), at: end + .milliseconds(1)),
        ]
        #expect(taken == [false, false, false, false])
    }
}
