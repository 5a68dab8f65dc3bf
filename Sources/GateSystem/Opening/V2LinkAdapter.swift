import GateCore
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Protocol v2's MQTT copy of the frame, published through the link; the signed replies
/// come through the link's reply reader (`MQTTLink.attachReplies`). A link that is not up
/// yet (the opening's own still connecting, the daemon's reconnecting) is waited for within
/// the attempt's budget: the copy is the same frame, so a late one is still only one
/// opening.
struct V2LinkAdapter: GateAdapter {
    let kind = AdapterKind.mqtt
    let link: MQTTLink
    let request: (topic: String, payload: [UInt8])

    /// The wait's state, shared with `cancel`: the link's own cancel once it published.
    final class Waiting: Sendable {
        struct State {
            var cancelled = false
            var published: AttemptCancel?
        }
        let state = Mutex(State())
    }

    func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        if let cancel = link.attempt(ticket, request: request) { return cancel }
        ticket.doing("waiting for the MQTT link to \(link.topic.broker)")
        let waiting = Waiting()
        let adapter = self
        let failure = OSThread.detach { adapter.wait(ticket, waiting) }
        if let failure {
            ticket.report(
                .unreachable("cannot wait for the MQTT link: \(SystemError("pthread_create", code: failure))")
            )
            ticket.finish()
            return AttemptCancel {}
        }
        return AttemptCancel {
            let published = waiting.state.withLock { state -> AttemptCancel? in
                state.cancelled = true
                return state.published
            }
            published?()
        }
    }

    /// Polls for the link until it publishes, the attempt is cancelled, or the budget ends.
    private func wait(_ ticket: AttemptTicket, _ waiting: Waiting) {
        while ticket.now() < ticket.deadline, !waiting.state.withLock({ $0.cancelled }) {
            if link.isReady, let cancel = link.attempt(ticket, request: request) {
                let cancelled = waiting.state.withLock { state -> Bool in
                    state.published = cancel
                    return state.cancelled
                }
                if cancelled { cancel() }
                return
            }
            usleep(Self.pollMicroseconds)
        }
        ticket.report(
            .unreachable(
                "the MQTT link to \(link.topic.broker) did not come up within the budget; nothing was published"
            )
        )
        ticket.finish()
    }

    static let pollMicroseconds: UInt32 = 5_000
}
