import GateCore
import Synchronization

/// The one place a trigger may leave from, for one opening
/// (docs/CONTRACT.md#evidence-and-time). Adapters run on threads of their own; each sends only through
/// `AttemptTicket.send`, which asks the permit under its lock:
/// - the attempt is still the running one and its deadline has not passed
///   (a name that resolved late, a connect that ended late, sends nothing);
/// - no `1` without its `0` was seen on the status topic before the trigger
///   (another client's cycle: the relay is busy);
/// - no trigger was sent by this opening's attempt yet;
/// - the process that asked for the opening is still there (`openerGone`).
/// The trigger's time is recorded (`stamp`) before it is sent, so an opener
/// killed mid-cycle still holds the next opening back for the cooldown.
public final class TriggerPermit: Sendable {
    struct State {
        var attempt = 0
        var deadline: MonotonicInstant?
        var open = false
        var sentInAttempt = false
        var sentInOpening = false
        /// Relay activity seen after one of this opening's triggers: nothing more may go.
        var answered = false
        /// A `1` seen on the status topic and no `0` after it, before our trigger.
        var relayActive = false
        /// The status watch's session when the running attempt's trigger left; nil
        /// when no watch was live then.
        var watchAtSend: UInt64?
        /// Status reports seen after this opening's first trigger, by kind: what the
        /// daemon then expects no more of as this opening's echo.
        var activationsSeen = 0
        var releasesSeen = 0
    }

    private let state: Mutex<State>
    private let stamp: @Sendable (MonotonicInstant) -> Void
    /// The live session of the opening's status watch (`StatusFeed.liveSession`).
    private let watchSession: @Sendable () -> UInt64?
    private let openerGone: (@Sendable () -> Bool)?
    /// Protocol v1: a `1`/`0` on the status topic is evidence. Under v2 it is neither
    /// evidence nor a busy relay (docs/CONTRACT.md#protocol-v2-openings): only counted, so
    /// that the daemon knows its own cycle's echoes.
    private let plainStatusIsEvidence: Bool
    let clock: any OpeningClock

    /// - Parameters:
    ///   - relayActive: the relay is already known to be active (the daemon's link saw
    ///     a `1` without its `0`).
    ///   - openerGone: whether the process that asked has hung up (a control socket
    ///     client); asked under the lock, last, so that a trigger either leaves while
    ///     its opener is there or not at all, and is recorded as what it was.
    ///   - stamp: records the trigger's time where the next opener will find it.
    ///   - watchSession: the opening's status watch's live session, if it has one.
    public init(
        relayActive: Bool = false,
        clock: any OpeningClock = SystemOpeningClock(),
        watchSession: @escaping @Sendable () -> UInt64? = { nil },
        openerGone: (@Sendable () -> Bool)? = nil,
        plainStatusIsEvidence: Bool = true,
        stamp: @escaping @Sendable (MonotonicInstant) -> Void
    ) {
        self.state = Mutex(State(relayActive: relayActive))
        self.plainStatusIsEvidence = plainStatusIsEvidence
        self.stamp = stamp
        self.watchSession = watchSession
        self.openerGone = openerGone
        self.clock = clock
    }

    /// Whether the attempt's trigger left while the status watch was live, and the
    /// same watch is live still: only then does its silence say the trigger was lost.
    func watchHeld(attempt: Int) -> Bool {
        let atSend = state.withLock { state -> UInt64? in
            guard state.attempt == attempt, state.sentInAttempt else { return nil }
            return state.watchAtSend
        }
        guard let atSend else { return false }
        return watchSession() == atSend
    }

    /// Whether the attempt's trigger has left.
    func sent(attempt: Int) -> Bool {
        state.withLock { $0.attempt == attempt && $0.sentInAttempt }
    }

    /// What of its own cycle the opening did not see on the status topic: one `1` and
    /// one `0` once a trigger left, less those seen after it.
    var echoesOwed: RelayObserver.Echoes {
        state.withLock { state in
            guard state.sentInOpening else { return .none }
            return RelayObserver.Echoes(
                activations: max(0, 1 - state.activationsSeen),
                releases: max(0, 1 - state.releasesSeen)
            )
        }
    }

    /// Opens the permit for a new attempt; closes the one before.
    func begin(attempt: Int, deadline: MonotonicInstant) {
        state.withLock { state in
            state.attempt = attempt
            state.deadline = deadline
            state.open = true
            state.sentInAttempt = false
            state.watchAtSend = nil
        }
    }

    /// After this, the attempt can send nothing, whatever its thread is doing.
    /// Returns whether it had sent its trigger.
    @discardableResult
    func close(attempt: Int) -> Bool {
        state.withLock { state in
            guard state.attempt == attempt else { return false }
            state.open = false
            return state.sentInAttempt
        }
    }

    /// Relay activity seen on the status topic. Returns true when it came after one of
    /// this opening's triggers (evidence: no further trigger may leave), false before
    /// any (then a `1` marks the relay busy, and a `0` frees it again).
    /// `echo`: it may be the late echo of the local opening before (`StatusFeed.attach`),
    /// which says nothing about the relay now.
    func observe(_ report: RelayObserver.Report, echo: Bool = false) -> Bool {
        state.withLock { state in
            if !plainStatusIsEvidence {
                guard state.sentInOpening else { return false }
                switch report {
                case .activated: state.activationsSeen += 1
                case .released: state.releasesSeen += 1
                case .invalid: break
                }
                return false
            }
            if state.sentInOpening {
                // The relay's `1` or `0` means it was reached: nothing more may go. A
                // payload outside the protocol is passed on (the MQTT attempt's own
                // answer) but says nothing about the relay.
                switch report {
                case .activated:
                    state.answered = true
                    state.activationsSeen += 1
                case .released:
                    state.answered = true
                    state.releasesSeen += 1
                case .invalid: break
                }
                return true
            }
            switch report {
            case .activated: if !echo { state.relayActive = true }
            case .released: state.relayActive = false
            case .invalid: break
            }
            return false
        }
    }

    /// Runs `send` if the attempt may still trigger; returns why not otherwise.
    func send<E: Error>(attempt: Int, during activity: String, _ send: () throws(E) -> Void) throws(E) -> Withholding? {
        try state.withLock { (state: inout State) throws(E) -> Withholding? in
            guard state.attempt == attempt, state.open, !state.sentInAttempt, let deadline = state.deadline else {
                return .budgetSpent(during: activity)
            }
            if state.answered { return .relayAnswered }
            if state.relayActive { return .relayActive }
            let now = clock.now()
            guard now < deadline else { return .budgetSpent(during: activity) }
            if let openerGone, openerGone() { return .openerGone }
            // Recorded before the send: a process killed between the two still leaves
            // the cooldown's start behind.
            stamp(now)
            state.watchAtSend = watchSession()
            state.sentInAttempt = true
            state.sentInOpening = true
            try send()
            return nil
        }
    }
}
