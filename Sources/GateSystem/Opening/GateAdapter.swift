import GateCore
import Synchronization

/// A transport that can carry one trigger to the ESP32 and report what comes back.
///
/// The state machine only ever sees `AdapterEvent`s, so adding a transport never
/// touches it: plan it in `AdapterPlan`, build it in `AdapterFactory`.
public protocol GateAdapter: Sendable {
    var kind: AdapterKind { get }

    /// Starts one attempt: send at most one trigger through `ticket.send`, report
    /// what comes back through `ticket`, and `finish()` it at the deadline. After
    /// `cancel` is called, drain what already arrived, report it, and finish
    /// promptly.
    func attempt(_ ticket: AttemptTicket) -> AttemptCancel
}
