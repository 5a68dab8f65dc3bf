import GateCore
import Synchronization

/// One attempt's handle on its opening: the permit to send, and where to report.
/// Adapters stamp each event with the time they read it, on their own thread,
/// so a consumer that runs late cannot turn an answer into "no answer".
public struct AttemptTicket: Sendable {
    public let deadline: MonotonicInstant
    let attempt: Int
    let permit: TriggerPermit
    let inputs: AsyncStream<OpeningInput>.Continuation
    /// What the attempt is doing, for the words of a budget that ends meanwhile.
    let activity: Activity

    final class Activity: Sendable {
        let words = Mutex("starting")
    }

    init(
        deadline: MonotonicInstant,
        attempt: Int,
        permit: TriggerPermit,
        inputs: AsyncStream<OpeningInput>.Continuation
    ) {
        self.deadline = deadline
        self.attempt = attempt
        self.permit = permit
        self.inputs = inputs
        self.activity = Activity()
    }

    /// The opening's clock: deadlines and event stamps are on it.
    public func now() -> MonotonicInstant {
        permit.clock.now()
    }

    /// Says what the attempt does now ("resolving gate.local").
    public func doing(_ what: String) {
        activity.words.withLock { $0 = what }
    }

    /// Sends the trigger through the permit; reports `.sent` or why nothing was sent.
    /// Returns whether it was sent.
    public func send<E: Error>(_ send: () throws(E) -> Void) throws(E) -> Bool {
        let during = whatItWasDoing
        if let withheld = try permit.send(attempt: attempt, during: during, send) {
            report(.withheld(withheld))
            return false
        }
        report(.sent)
        return true
    }

    public func report(_ event: AdapterEvent) {
        inputs.yield(.adapter(attempt: attempt, event, at: now()))
    }

    /// A non-retained status message, from the attempt's own subscription.
    public func observe(_ report: RelayObserver.Report) {
        let at = now()
        if permit.observe(report) {
            inputs.yield(.observed(report, at: at))
        }
    }

    /// The attempt is over; call once, last.
    public func finish() {
        inputs.yield(.ended(attempt: attempt))
    }

    var whatItWasDoing: String { activity.words.withLock { $0 } }
}
