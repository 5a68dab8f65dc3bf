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
