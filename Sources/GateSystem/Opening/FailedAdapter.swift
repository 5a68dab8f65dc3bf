import GateCore
import Logging
import Plumbing

/// An adapter that can only report why it cannot run.
struct FailedAdapter: GateAdapter {
    let kind: AdapterKind
    let event: AdapterEvent

    func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        ticket.report(event)
        ticket.finish()
        return AttemptCancel {}
    }
}
