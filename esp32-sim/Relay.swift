import Glibc
import Logging
import Synchronization

/// What became of one trigger.
enum TriggerOutcome: Sendable, Equatable {
    /// The relay closed; `number` counts activations since start (1, 2, …).
    case activated(number: Int)
    /// The relay was already closed: the real firmware drops such a trigger without a word.
    case ignoredRelayHeld
}

/// The relay and its timing, shared by every transport: the real ESP32 has one relay, so a
/// UDP trigger and an MQTT trigger that arrive together must yield one activation, not two.
///
/// Transports hand in a trigger and a `reply` closure; the relay decides, through the fault
/// mode, which abstract `Report`s to give and when, and the transport only encodes them.
/// `trigger` is synchronous (state behind a `Mutex`, not an actor) so that the transport's
/// receive thread learns at once whether the trigger counted, and so that two datagrams
/// are handled in the order they arrived.
final class Relay: Sendable {
    private struct State {
        var held = false
        var activations = 0
    }

    private let state = Mutex(State())
    private let hold: Duration
    private let fault: FaultMode
    private let triggerLog: TriggerLog?
    private let logger: Logger

    init(hold: Duration, fault: FaultMode, triggerLog: TriggerLog?, logger: Logger) {
        self.hold = hold
        self.fault = fault
        self.triggerLog = triggerLog
        self.logger = logger
    }

    var isHeld: Bool { state.withLock { $0.held } }

    /// Closes the relay unless it is already closed. `reply` is called with each report:
    /// the closing ones before this returns, the releasing ones later, from another task,
    /// which is why it must be `@Sendable`. The releasing ones are given under the relay's
    /// lock, so `reply` must be quick and must not call back into the relay.
    @discardableResult
    func trigger(
        via transport: Transport,
        from sender: String?,
        reply: @escaping @Sendable (Report) -> Void
    ) -> TriggerOutcome {
        let number: Int? = state.withLock { state in
            guard !state.held else { return nil }
            state.held = true
            state.activations += 1
            return state.activations
        }
        let origin = sender.map { "\(transport.rawValue) from \($0)" } ?? transport.rawValue
        guard let number else {
            logger.info("ignored: relay held (trigger via \(origin))")
            return .ignoredRelayHeld
        }

        let holdTime = fault.hold(configured: hold)
        logger.info("activated #\(number) via \(origin), holding \(milliseconds(holdTime)) ms")
        // Recorded before the first report goes out, so that whoever has seen 0x01 can rely
        // on the line being in the file already.
        do {
            try triggerLog?.record(via: transport, from: sender)
        } catch {
            logger.error("trigger log: \(error)")
        }
        send(fault.reports(at: .closed), edge: .closed, reply: reply)

        Task { [self] in
            // Unstructured and never cancelled: the hold runs its course whatever happens to
            // the transport that triggered it, like the physical relay.
            try? await Task.sleep(for: holdTime)
            // Reported and freed under the lock: a trigger racing the 0x00 waits until it is
            // out and then finds the relay ready, so whoever has seen 0x00 can trigger again
            // at once, and no 0x01 of a new cycle can overtake the 0x00 of this one.
            state.withLock { state in
                logger.info("released #\(number)")
                send(fault.reports(at: .released), edge: .released, reply: reply)
                state.held = false
            }
        }
        return .activated(number: number)
    }

    private func send(_ reports: [Report], edge: RelayEdge, reply: @Sendable (Report) -> Void) {
        if reports.isEmpty {
            logger.debug("fault \(fault.rawValue): nothing reported when the relay \(edge == .closed ? "closed" : "released")")
        }
        for report in reports {
            reply(report)
        }
    }
}

func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
}
