import GateCore
import Synchronization

/// What reaches an opening's pipeline, from any thread, in one stream.
enum OpeningInput: Sendable {
    case adapter(attempt: Int, AdapterEvent, at: MonotonicInstant)
    /// The attempt's thread is done: nothing more will come from it.
    case ended(attempt: Int)
    /// Relay activity on the status topic after this opening's trigger.
    case observed(RelayObserver.Report, at: MonotonicInstant)
    /// Protocol v2: a genuine reply for the opening's frame that came another way than
    /// the running attempt's own (the MQTT link's replies topic).
    case signed(V2ReplyKind, epoch: UInt32, at: MonotonicInstant)
    /// Protocol v2: the status query `query` learnt the epoch, or why not.
    case epoch(query: Int, Result<UInt32, V2StatusQuery.Failure>, at: MonotonicInstant)
    /// The attempt's deadline passed some time ago (`stage` 1), and then again
    /// (`stage` 2) without the attempt ending.
    case overdue(attempt: Int, stage: Int)
}
