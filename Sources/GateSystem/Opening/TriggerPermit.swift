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
    func observe(_ report: RelayObserver.Report) -> Bool {
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
            case .activated: state.relayActive = true
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

/// One attempt's handle on its opening: the permit to send, and where to report.
/// Adapters stamp each event with the time they read it, on their own thread,
/// so a consumer that runs late cannot turn an answer into "no answer".
public struct AttemptTicket: Sendable {
    public let deadline: MonotonicInstant
    let attempt: Int
    let permit: TriggerPermit
    let inputs: AsyncStream<OpeningInput>.Continuation
    /// What the attempt is doing, for the words of a budget that ends meanwhile.
    let activity: Activity

    final class Activity: Sendable {
        let words = Mutex("starting")
    }

    init(
        deadline: MonotonicInstant,
        attempt: Int,
        permit: TriggerPermit,
        inputs: AsyncStream<OpeningInput>.Continuation
    ) {
        self.deadline = deadline
        self.attempt = attempt
        self.permit = permit
        self.inputs = inputs
        self.activity = Activity()
    }

    /// The opening's clock: deadlines and event stamps are on it.
    public func now() -> MonotonicInstant {
        permit.clock.now()
    }

    /// Says what the attempt does now ("resolving gate.local").
    public func doing(_ what: String) {
        activity.words.withLock { $0 = what }
    }

    /// Sends the trigger through the permit; reports `.sent` or why nothing was sent.
    /// Returns whether it was sent.
    public func send<E: Error>(_ send: () throws(E) -> Void) throws(E) -> Bool {
        let during = whatItWasDoing
        if let withheld = try permit.send(attempt: attempt, during: during, send) {
            report(.withheld(withheld))
            return false
        }
        report(.sent)
        return true
    }

    public func report(_ event: AdapterEvent) {
        inputs.yield(.adapter(attempt: attempt, event, at: now()))
    }

    /// A non-retained status message, from the attempt's own subscription.
    public func observe(_ report: RelayObserver.Report) {
        let at = now()
        if permit.observe(report) {
            inputs.yield(.observed(report, at: at))
        }
    }

    /// The attempt is over; call once, last.
    public func finish() {
        inputs.yield(.ended(attempt: attempt))
    }

    var whatItWasDoing: String { activity.words.withLock { $0 } }
}

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

/// Stops a running attempt; safe to call more than once and after it finished.
public struct AttemptCancel: Sendable {
    let body: @Sendable () -> Void

    public init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    public func callAsFunction() {
        body()
    }
}

/// Relay activity on the status topic, from a watcher the opener does not own
/// (the daemon's warm link): attach for the length of an opening.
public protocol StatusFeed: Sendable {
    /// Whether the last status seen was a `1` without its `0`, still within its
    /// release budget.
    var relayActive: Bool { get }
    /// The subscription now live (its SUBACK seen), or nil while there is none. It
    /// changes whenever the subscription is lost and made again: a watch that broke
    /// in between may have missed messages (docs/CONTRACT.md#evidence-and-time).
    var liveSession: UInt64? { get }
    /// Delivers every non-retained status message until the returned attachment ends.
    func attach(_ observer: @escaping @Sendable (RelayObserver.Report) -> Void) -> StatusFeedAttachment
    /// Returns once every message the broker sent before the call has been delivered;
    /// false when that cannot be known within `timeout` (the watch then counts as broken).
    func sync(timeout: Duration) async -> Bool
}

/// An opening's hold on a `StatusFeed`. Ending it says which echoes of the opening's
/// own cycle are still to come (`RelayObserver.Echoes`), in one step with the detach,
/// so that no status message falls between the two.
public struct StatusFeedAttachment: Sendable {
    let end: @Sendable (RelayObserver.Echoes) -> Void

    public init(end: @escaping @Sendable (RelayObserver.Echoes) -> Void) {
        self.end = end
    }

    public func detach(owing echoes: RelayObserver.Echoes) {
        end(echoes)
    }
}
