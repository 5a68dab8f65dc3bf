import GateCore
import Logging

/// The attempt an opening runs now (v1's `OpeningRun` and v2's `V2OpeningRun`): its
/// adapter, how to stop it, and its overdue timer.
struct RunningAttempt {
    let number: Int
    let kind: AdapterKind
    let ticket: AttemptTicket
    let cancel: AttemptCancel
    let stopTimer: @Sendable () -> Void

    /// Evidence that came on another thread than the adapter's (the status topic, a
    /// signed reply on the MQTT link) can overtake the adapter's own `.sent`: the permit
    /// records a send before it happens, and the answer may be read before the adapter
    /// reports it. The machine then hears of the send first (`send`, which it takes
    /// once), so that the attempt that carried the trigger says it did.
    func sentFirst<Action>(permit: TriggerPermit, _ send: () -> [Action]) -> [Action] {
        permit.sent(attempt: number) ? send() : []
    }

    /// Ends it: the permit closes first, so nothing more leaves; then its timer and adapter stop.
    func end(permit: TriggerPermit) {
        permit.close(attempt: number)
        stopTimer()
        cancel()
    }

    /// Its adapter ended without a last word: what that amounts to, as its adapter's event.
    func endedSilently(permit: TriggerPermit, inputs: AsyncStream<OpeningInput>.Continuation, clock: any OpeningClock) {
        let event = OpeningPipeline.silentEnd(ticket, permit: permit)
        inputs.yield(.adapter(attempt: number, event, at: clock.now()))
    }

    /// The overdue timer's stages: first the adapter is asked to drain what already arrived
    /// and finish (a thread blocked in a call cannot); then the opening decides without it.
    func overdue(
        stage: Int,
        permit: TriggerPermit,
        inputs: AsyncStream<OpeningInput>.Continuation,
        clock: any OpeningClock,
        logger: Logger
    ) {
        if stage == 1 {
            cancel()
            return
        }
        logger.warning(
            "adapter did not finish after its deadline",
            metadata: ["adapter": "\(kind)", "doing": "\(ticket.whatItWasDoing)"]
        )
        endedSilently(permit: permit, inputs: inputs, clock: clock)
    }
}
