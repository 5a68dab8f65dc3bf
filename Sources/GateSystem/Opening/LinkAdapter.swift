import GateCore
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The MQTT attempt of either protocol (docs/CONTRACT.md#protocol-over-mqtt): the
/// trigger, or protocol v2's frame in hex, published through an `MQTTLink` subscribed to
/// the status topic, whose messages are the attempt's evidence. Every MQTT opening goes
/// through a link: the daemon's warm one, the opening's own (`gate open`), or one made
/// for this attempt alone when the daemon's is down (a broker back before the link's
/// next retry still carries the opening).
///
/// A link that is not up yet is waited for within the attempt's budget (a late copy of a
/// v2 frame is still only one opening). A link of this opening's own that failed ends
/// the attempt at once with its words: what refused, and how to fix it.
public struct LinkAdapter: GateAdapter {
    public let kind = AdapterKind.mqtt
    let link: MQTTLink
    /// Protocol v2's frame and where it goes; nil for v1's trigger.
    let request: (topic: String, payload: [UInt8])?
    /// The link was made for this opening: its failures are this opening's.
    let failFast: Bool
    /// The link was made for this attempt alone: started here, stopped at its end, its
    /// status messages the attempt's own.
    let ownsLink: Bool

    public init(
        link: MQTTLink,
        request: (topic: String, payload: [UInt8])? = nil,
        failFast: Bool,
        ownsLink: Bool = false
    ) {
        self.link = link
        self.request = request
        self.failFast = failFast
        self.ownsLink = ownsLink
    }

    /// The wait's state, shared with `cancel`: the link's own cancel once it published.
    final class Waiting: Sendable {
        struct State {
            var cancelled = false
            var published: AttemptCancel?
        }
        let state = Mutex(State())
    }

    public func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        guard let release = ownsLink ? own(ticket) : { @Sendable in } else {
            ticket.finish()
            return AttemptCancel {}
        }
        if let cancel = link.attempt(ticket, request: request) {
            return AttemptCancel {
                cancel()
                release()
            }
        }
        ticket.doing("connecting to MQTT broker at \(link.topic.broker)")
        let waiting = Waiting()
        let adapter = self
        if let failure = OSThread.detach({ adapter.wait(ticket, waiting) }) {
            ticket.report(
                .unreachable("cannot wait for the MQTT link: \(SystemError("pthread_create", code: failure))")
            )
            ticket.finish()
            release()
            return AttemptCancel {}
        }
        return AttemptCancel {
            let published = waiting.state.withLock { state -> AttemptCancel? in
                state.cancelled = true
                return state.published
            }
            published?()
            release()
        }
    }

    /// Starts a link made for this attempt, its status messages going to `ticket`;
    /// returns what ends it, or nil (reported) when it cannot start.
    private func own(_ ticket: AttemptTicket) -> (@Sendable () -> Void)? {
        let attachment = link.attach { report, _ in ticket.observe(report) }
        if let failure = link.start() {
            attachment.detach(owing: .none)
            ticket.report(.unreachable("cannot start the MQTT link: \(SystemError("pthread_create", code: failure))"))
            return nil
        }
        return { [link] in
            attachment.detach(owing: .none)
            link.stop()
        }
    }

    /// Polls for the link until it publishes, fails (an opening's own), the attempt is
    /// cancelled, or the budget ends.
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
            if failFast, link.hasFailed { break }
            usleep(Self.pollMicroseconds)
        }
        ticket.report(link.notReadyEvent)
        ticket.finish()
    }

    /// As often as `OpeningPipeline.waitUntilLive` looks: the trigger leaves within a
    /// millisecond of the SUBACK (a wait, not a busy loop).
    static let pollMicroseconds: UInt32 = 1_000
}
