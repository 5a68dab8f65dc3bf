import Glibc
import Logging
import Synchronization

/// The relay and its timing, shared by every transport: the real ESP32 has one relay, so a
/// UDP trigger and an MQTT trigger that arrive together must yield one activation, not two.
///
/// Transports hand in a trigger and, if the sender expects an answer, a `reply` closure;
/// transports with an audience of their own (MQTT's status topic) register an observer,
/// which hears every relay change whatever triggered it, as the real firmware publishes
/// status for UDP triggers too. The relay decides, through each transport's fault, which
/// abstract `V1Report`s to give and when; the transports only encode them.
/// `trigger` is synchronous (state behind a `Mutex`, not an actor) so that the closing
/// report is out before the transport's receive thread reads on, and so that two triggers
/// are handled in the order they arrived.
final class Relay: Sendable {
    typealias Deliver = @Sendable (V1Report) -> Void

    private typealias Observer = (transport: Transport, deliver: Deliver)

    private struct State {
        var held = false
        var activations = 0
        var observers: [Observer] = []
    }

    private let state = Mutex(State())
    private let hold: Duration
    private let faults: Faults
    private let triggerLog: TriggerLog?
    private let logger: Logger

    init(hold: Duration, faults: Faults, triggerLog: TriggerLog?, logger: Logger) {
        self.hold = hold
        self.faults = faults
        self.triggerLog = triggerLog
        self.logger = logger
    }

    var isHeld: Bool { state.withLock { $0.held } }

    /// `deliver` gets the reports of every later activation, encoded under `transport`'s
    /// fault. Same rules as `reply` in `trigger`: quick, and never calling back into the relay.
    func addObserver(on transport: Transport, _ deliver: @escaping Deliver) {
        state.withLock { $0.observers.append((transport, deliver)) }
    }

    /// Closes the relay unless it is already closed. `reply` (the sender's answer) and the
    /// observers are called with each report: the closing ones before this returns, the
    /// releasing ones later, from another task, which is why they must be `@Sendable`. The
    /// releasing ones are given under the relay's lock, so they must be quick and must not
    /// call back into the relay. The hold is that of the triggering transport's fault.
    func trigger(via transport: Transport, from sender: String?, payload: String? = nil, reply: Deliver?) {
        let claimed: (number: Int, observers: [Observer])? = state.withLock { state in
            guard !state.held else { return nil }
            state.held = true
            state.activations += 1
            return (state.activations, state.observers)
        }
        let origin = sender.map { "\(transport.rawValue) from \($0)" } ?? transport.rawValue
        guard let claimed else {
            logger.info("ignored: relay held (trigger via \(origin))")
            return
        }
        let (number, observers) = claimed

        let fault = faults[transport]
        let holdTime = fault.hold(configured: hold)
        logger.info("activated #\(number) via \(origin), holding \(milliseconds(holdTime)) ms")
        // Recorded before the first report goes out, so that whoever has seen the `1` can
        // rely on the line being in the file already.
        if let error = triggerLog?.record(via: transport, from: sender, payload: payload) {
            logger.error("trigger log: \(error)")
        }
        announce(.on, trigger: transport, reply: reply, observers: observers)

        Task { [self] in
            // Unstructured and never cancelled: the hold runs its course whatever happens to
            // the transport that triggered it, like the physical relay.
            try? await Task.sleep(for: holdTime)
            // Reported and freed under the lock: a trigger racing the release report waits
            // until it is out and then finds the relay ready, so whoever has seen `0` can
            // trigger again at once, and no `1` of a new cycle can overtake the `0` of this one.
            state.withLock { state in
                logger.info("released #\(number)")
                announce(.off, trigger: transport, reply: reply, observers: observers)
                state.held = false
            }
        }
    }

    private func announce(_ report: Report, trigger: Transport, reply: Deliver?, observers: [Observer]) {
        if let reply { send(report, on: trigger, to: reply) }
        for observer in observers { send(report, on: observer.transport, to: observer.deliver) }
    }

    private func send(_ report: Report, on transport: Transport, to deliver: Deliver) {
        let moment = report == .on ? "closed" : "released"
        faults.deliver(report, on: transport, logger: logger, dropped: "nothing reported when the relay \(moment)") {
            deliver($0 ? .garbage : report == .on ? .activated : .released)
        }
    }
}

func milliseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1000 + attoseconds / 1_000_000_000_000_000
}
