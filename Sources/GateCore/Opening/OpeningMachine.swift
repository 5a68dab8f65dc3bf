/// The complete-cycle state machine for one opening (docs/CONTRACT.md#one-opening).
///
/// A value type: the caller feeds it events, each stamped with the time it
/// arrived (read from its socket, not dequeued), and performs the actions it
/// returns. It never sends a trigger itself, so every rule about *when* a second
/// adapter may be started lives here, where it can be tested without a network.
///
/// Never trigger twice: the machine starts the next adapter only when the
/// current one ended without any evidence that its trigger reached the ESP32:
/// nothing came back within the budget on any channel, or the network refused
/// at once, or nothing was sent. An answer read after the deadline is still
/// evidence: it ends the opening, it never lets a fallback go.
public struct OpeningMachine: Sendable {
    /// One adapter to try, with its complete-cycle budget.
    public struct PlannedAdapter: Sendable, Hashable {
        public var kind: AdapterKind
        public var budget: Duration

        public init(kind: AdapterKind, budget: Duration) {
            self.kind = kind
            self.budget = budget
        }
    }

    public enum Event: Sendable, Hashable {
        case start(at: MonotonicInstant)
        case adapter(AdapterKind, AdapterEvent, at: MonotonicInstant)
        /// Relay activity on the status topic after the running attempt's trigger,
        /// whoever carried it (the attempt's own subscription or the daemon's link).
        case observed(RelayObserver.Report, at: MonotonicInstant)
        /// The reset delay after a timeout or an error has passed.
        case resetDelayElapsed(at: MonotonicInstant)
        /// The opening was stopped from outside (the daemon stopping, its service
        /// cancelled) while an attempt ran; `triggerSent` is the permit's record of
        /// whether that attempt's trigger left, whether or not its `.sent` arrived here.
        case stopped(triggerSent: Bool, at: MonotonicInstant)
        /// The running attempt's trigger left while nothing watched the status topic
        /// (no subscription live), or the watch broke since: its silence does not say
        /// that the trigger was lost, so no other adapter may follow it.
        case unwatched
    }

    public enum Action: Sendable, Hashable {
        /// Start the adapter: send at most one trigger before `deadline` and report
        /// what comes back.
        case startAdapter(AdapterKind, deadline: MonotonicInstant)
        /// Stop listening on the adapter: its attempt is over.
        case stopAdapter(AdapterKind)
        case stateChanged(GateState, adapter: AdapterKind?)
        /// The opening is decided. After a failure, `resetAt` is when `ready` returns.
        case finished(OpeningResult, resetAt: MonotonicInstant?)
    }

    enum Phase: Sendable, Hashable {
        case idle
        /// `plan[index]` started (its trigger sent or not yet), waiting for `1`.
        case triggering(index: Int, startedAt: MonotonicInstant, deadline: MonotonicInstant)
        /// `1` seen for `plan[index]`, waiting for `0`.
        case waitingForRelayClose(index: Int, startedAt: MonotonicInstant, deadline: MonotonicInstant)
        /// Failed (`shown` is `timeout` or `error`); `ready` again at `resetAt`.
        case resetting(resetAt: MonotonicInstant, shown: GateState)
        case done
    }

    public let plan: [PlannedAdapter]
    public let resetDelay: Duration
    /// The adapter forced with `--via`, if any: its failure is reported as that
    /// adapter's connection failure rather than `allAdaptersFailed`.
    public let forced: AdapterKind?
    /// The attempt an adapter's event is about: where it is in the plan and its times.
    private struct Attempt {
        let index: Int
        let startedAt: MonotonicInstant
        let deadline: MonotonicInstant
    }

    /// How an attempt ends on an adapter's event.
    private enum AttemptEnding {
        /// The ESP32 answered but the cycle failed: no other adapter may be tried.
        case fail(AttemptOutcome, AttemptReason, GateKeeperError)
        /// No evidence that the trigger reached the ESP32: the next adapter may go.
        case giveUp(AttemptOutcome, AttemptReason)
    }

    private(set) var phase: Phase = .idle
    private var startedAt = MonotonicInstant(nanoseconds: 0)
    /// Adapters left out before the opening.
    private let skipped: [AttemptRecord]
    /// Adapters tried so far, in the order they ran.
    private var tried: [AttemptRecord] = []
    /// Whether the running attempt's trigger has left.
    private var sent = false
    /// A lone `0` seen on the status topic during the running attempt: evidence.
    private var releaseSeen = false
    /// The running attempt's trigger left with no live watch on the status topic.
    private var unwatched = false
    /// The attempt that decided the outcome alone; nothing after it is listed.
    private var decidedBy: AdapterKind?
    /// When each attempt started, by plan index.
    private var attemptStarts: [Int: MonotonicInstant] = [:]
    /// The earlier attempt whose trigger the relay answered after the running attempt
    /// began: the running one's permit closed before it sent anything, so the cycle on
    /// its way is that earlier trigger's.
    private var answeredFor: Int?

    /// Every adapter's part in adapter order (UDP, then MQTT), skipped ones included,
    /// up to the attempt that decided the outcome.
    public var attempts: [AttemptRecord] {
        let order = AdapterKind.allCases
        let all = (skipped + tried).sorted {
            (order.firstIndex(of: $0.adapter) ?? 0) < (order.firstIndex(of: $1.adapter) ?? 0)
        }
        guard let decidedBy, let last = all.firstIndex(where: { $0.adapter == decidedBy }) else { return all }
        return Array(all[...last])
    }

    /// - Parameters:
    ///   - plan: adapters to try, in order.
    ///   - skipped: adapters left out before the opening, with their reasons; they
    ///     are listed in `attempts` in adapter order with the tried ones.
    public init(plan: [PlannedAdapter], skipped: [AttemptRecord] = [], resetDelay: Duration, forced: AdapterKind? = nil)
    {
        self.plan = plan
        self.skipped = skipped
        self.resetDelay = resetDelay
        self.forced = forced
    }

    /// The state to show for the machine as it is now.
    public var state: GateState {
        switch phase {
        case .idle, .done: return .ready
        case .triggering:
            // What was announced: `triggering` once a trigger of this opening left.
            return sent || tried.contains(where: \.triggerSent) ? .triggering : .ready
        case .waitingForRelayClose: return .waitingForRelayClose
        case .resetting(_, let shown): return shown
        }
    }

    /// The adapter whose attempt runs now, if any.
    public var running: AdapterKind? {
        switch phase {
        case .triggering(let index, _, _), .waitingForRelayClose(let index, _, _): return plan[index].kind
        case .idle, .resetting, .done: return nil
        }
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .start(let now):
            guard case .idle = phase else { return [] }
            startedAt = now
            return startAdapter(at: 0, now: now)

        case .adapter(let kind, let adapterEvent, let now):
            guard running == kind else {
                // A byte after the decision (a duplicate `0`, a late answer) changes nothing.
                return []
            }
            return handleAdapter(adapterEvent, now: now)

        case .observed(let report, let now):
            guard let kind = running else { return [] }
            switch (report, kind) {
            case (.activated, _):
                return handleAdapter(.relay(.activated), now: now)
            case (.released, .mqtt):
                return handleAdapter(.relay(.released), now: now)
            case (.invalid(let why), .mqtt):
                return handleAdapter(.invalid(why), now: now)
            case (.released, .udp):
                // A `0` with no `1` before it, seen beside a UDP attempt after its trigger:
                // the relay was active, perhaps through this trigger (its `1` lost on the
                // way): no fallback, although the UDP answer may still confirm the cycle.
                guard case .waitingForRelayClose = phase else {
                    releaseSeen = true
                    return []
                }
                return handleAdapter(.relay(.released), now: now)
            case (.invalid, .udp):
                // Garbage on the topic is not the ESP32's answer to a datagram.
                return []
            }

        case .resetDelayElapsed(let now):
            guard case .resetting(let resetAt, _) = phase, now >= resetAt else { return [] }
            phase = .done
            return [.stateChanged(.ready, adapter: nil)]

        case .stopped(let triggerSent, let now):
            return stop(triggerSent: triggerSent, now: now)

        case .unwatched:
            if running != nil { unwatched = true }
            return []
        }
    }

    /// An opening stopped from outside ends like one whose plan ran out: the outcome
    /// comes from what left (`exhausted`), never a fallback.
    private mutating func stop(triggerSent: Bool, now: MonotonicInstant) -> [Action] {
        switch phase {
        case .idle, .resetting, .done:
            return []
        case .triggering(let index, let attemptStart, _):
            sent = sent || triggerSent
            if sent {
                record(index, .noAnswer, .stopped, attemptStart: attemptStart, now: now)
            } else {
                // Nothing left: as good as not tried (docs/CONTRACT.md#the-json-result).
                tried.append(
                    AttemptRecord(adapter: plan[index].kind, outcome: .skipped, reason: .stopped, duration: nil)
                )
            }
            return [.stopAdapter(plan[index].kind)] + exhausted(now: now)
        case .waitingForRelayClose(let index, let attemptStart, _):
            sent = sent || triggerSent
            return fail(
                index: index,
                attemptStart: attemptStart,
                now: now,
                outcome: .timeout,
                reason: .stopped,
                error: .operationTimeout
            )
        }
    }

    private mutating func handleAdapter(_ event: AdapterEvent, now: MonotonicInstant) -> [Action] {
        switch phase {
        case .idle, .resetting, .done:
            return []
        case .triggering(let index, let attemptStart, let deadline):
            let attempt = Attempt(index: index, startedAt: attemptStart, deadline: deadline)
            return whileTriggering(event, attempt, now: now)
        case .waitingForRelayClose(let index, let attemptStart, let deadline):
            let attempt = Attempt(index: index, startedAt: attemptStart, deadline: deadline)
            return whileRelayHeld(event, attempt, now: now)
        }
    }

    /// An adapter's event before its relay was seen active.
    private mutating func whileTriggering(_ event: AdapterEvent, _ attempt: Attempt, now: MonotonicInstant) -> [Action]
    {
        let budget = plan[attempt.index].budget
        let ending: AttemptEnding
        switch event {
        case .sent:
            // `triggering` says a trigger left (docs/CONTRACT.md#one-opening): announced
            // now, never when the attempt merely starts (it may send nothing at all).
            guard !sent else { return [] }
            sent = true
            return [.stateChanged(.triggering, adapter: plan[attempt.index].kind)]
        case .relay(.activated) where now >= attempt.deadline:
            // Read late, yet the ESP32 answered: evidence, so no fallback; and its `0`
            // can no longer come within the budget.
            ending = .fail(.timeout, .activatedAtDeadline(budget: budget), .operationTimeout)
        case .relay(.activated):
            phase = .waitingForRelayClose(
                index: attempt.index,
                startedAt: attempt.startedAt,
                deadline: attempt.deadline
            )
            return [.stateChanged(.waitingForRelayClose, adapter: plan[owner(of: attempt.index)].kind)]
        case .relay(.released):
            ending = .fail(.invalidResponse, .releaseBeforeActivation, .invalidResponse)
        case .invalid(let description):
            ending = .fail(.invalidResponse, .invalid(description), .invalidResponse)
        case .unreachable(let reason):
            ending = .giveUp(.unreachable, .adapter(reason))
        case .lost(let reason):
            ending = .giveUp(.noAnswer, .lostAfterTrigger(reason))
        case .misconfigured(let reason):
            ending = .giveUp(.misconfigured, .adapter(reason))
        case .withheld(.relayActive):
            // Nothing was sent, and no other adapter may send either: the relay is busy.
            return refuseBusy(index: attempt.index, attemptStart: attempt.startedAt, now: now)
        case .withheld(.openerGone):
            // Whoever asked hung up: no adapter may send for them, so none is tried.
            record(attempt.index, .unreachable, .withheld(.openerGone), attemptStart: attempt.startedAt, now: now)
            return [.stopAdapter(plan[attempt.index].kind)] + exhausted(now: now)
        case .withheld(.relayAnswered):
            // The status topic's `1` that closed the permit is on its way here; it
            // answers the last trigger that left, not this attempt, which sent nothing.
            if !sent { answeredFor = lastSentIndex }
            return []
        case .signed:
            // A protocol v2 reply never reaches a v1 opening (`V2OpeningMachine`'s).
            return []
        case .withheld(let why):
            ending = .giveUp(.unreachable, .withheld(why))
        case .deadlineReached:
            ending = .giveUp(.noAnswer, .noAnswer(budget: budget))
        }
        return end(attempt, ending, now: now)
    }

    /// An adapter's event once its relay was seen active: it ends in success or failure,
    /// never in a fallback.
    private mutating func whileRelayHeld(_ event: AdapterEvent, _ attempt: Attempt, now: MonotonicInstant) -> [Action] {
        let budget = plan[attempt.index].budget
        switch event {
        case .sent, .relay(.activated), .withheld, .signed:
            // A repeated `1` while the relay is held is harmless (docs/CONTRACT.md#protocol-over-udp).
            sent = sent || event == .sent
            return []
        case .relay(.released) where now >= attempt.deadline, .deadlineReached:
            return end(attempt, .fail(.timeout, .noRelease(budget: budget), .operationTimeout), now: now)
        case .relay(.released):
            return succeed(index: attempt.index, attemptStart: attempt.startedAt, now: now)
        case .invalid(let description):
            return end(attempt, .fail(.invalidResponse, .invalid(description), .invalidResponse), now: now)
        case .unreachable(let reason), .lost(let reason), .misconfigured(let reason):
            // The relay is known to be on: no fallback, whatever broke afterwards.
            return end(attempt, .fail(.timeout, .failedAfterActivation(reason), .operationTimeout), now: now)
        }
    }

    private mutating func end(_ attempt: Attempt, _ ending: AttemptEnding, now: MonotonicInstant) -> [Action] {
        switch ending {
        case .fail(let outcome, let reason, let error):
            return fail(
                index: attempt.index,
                attemptStart: attempt.startedAt,
                now: now,
                outcome: outcome,
                reason: reason,
                error: error
            )
        case .giveUp(let outcome, let reason):
            return giveUp(
                index: attempt.index,
                attemptStart: attempt.startedAt,
                now: now,
                outcome: outcome,
                reason: reason
            )
        }
    }

    private mutating func startAdapter(at index: Int, now: MonotonicInstant) -> [Action] {
        guard index < plan.count else {
            return exhausted(now: now)
        }
        let deadline = now + plan[index].budget
        phase = .triggering(index: index, startedAt: now, deadline: deadline)
        attemptStarts[index] = now
        sent = false
        releaseSeen = false
        unwatched = false
        answeredFor = nil
        // No state change yet: `triggering` waits for the attempt's `.sent`.
        return [.startAdapter(plan[index].kind, deadline: deadline)]
    }

    private mutating func record(
        _ index: Int,
        _ outcome: AttemptOutcome,
        _ reason: AttemptReason?,
        attemptStart: MonotonicInstant,
        now: MonotonicInstant
    ) {
        tried.append(
            AttemptRecord(
                adapter: plan[index].kind,
                outcome: outcome,
                reason: reason,
                duration: now.duration(since: attemptStart),
                triggerSent: sent
            )
        )
    }

    /// The attempt a decided outcome belongs to: the running one, unless it sent nothing
    /// because the relay had answered an earlier trigger (`answeredFor`).
    private func owner(of index: Int) -> Int {
        sent ? index : (answeredFor ?? index)
    }

    /// The plan index of the last attempt whose trigger left, if any.
    private var lastSentIndex: Int? {
        guard let last = tried.last(where: \.triggerSent) else { return nil }
        return plan.firstIndex(where: { $0.kind == last.adapter })
    }

    /// Records a decided outcome for the attempt it belongs to (`owner(of:)`) and returns
    /// that attempt's adapter. When the outcome is an earlier attempt's, that attempt's
    /// record (its silence, which was not the end of the story) is replaced, and the
    /// running attempt is listed as having sent nothing.
    private mutating func decide(
        _ index: Int,
        _ outcome: AttemptOutcome,
        _ reason: AttemptReason?,
        attemptStart: MonotonicInstant,
        now: MonotonicInstant
    ) -> AdapterKind {
        let owner = owner(of: index)
        guard owner != index, let ownerStart = attemptStarts[owner] else {
            record(index, outcome, reason, attemptStart: attemptStart, now: now)
            decidedBy = plan[index].kind
            return plan[index].kind
        }
        let kind = plan[owner].kind
        if let earlier = tried.lastIndex(where: { $0.adapter == kind }) { tried.remove(at: earlier) }
        tried.append(
            AttemptRecord(
                adapter: kind,
                outcome: outcome,
                reason: reason,
                duration: now.duration(since: ownerStart),
                triggerSent: true
            )
        )
        tried.append(
            AttemptRecord(
                adapter: plan[index].kind,
                outcome: .skipped,
                reason: .withheld(.relayAnswered),
                duration: nil,
                triggerSent: false
            )
        )
        decidedBy = kind
        return kind
    }

    private mutating func succeed(index: Int, attemptStart: MonotonicInstant, now: MonotonicInstant) -> [Action] {
        let kind = decide(index, .success, nil, attemptStart: attemptStart, now: now)
        phase = .done
        let result = OpeningResult(
            error: nil,
            adapter: kind,
            duration: now.duration(since: startedAt),
            attempts: attempts
        )
        return [.stopAdapter(plan[index].kind), .stateChanged(.ready, adapter: kind), .finished(result, resetAt: nil)]
    }

    /// The ESP32 answered but the cycle failed: no other adapter may be tried.
    private mutating func fail(
        index: Int,
        attemptStart: MonotonicInstant,
        now: MonotonicInstant,
        outcome: AttemptOutcome,
        reason: AttemptReason,
        error: GateKeeperError
    ) -> [Action] {
        let kind = decide(index, outcome, reason, attemptStart: attemptStart, now: now)
        return [.stopAdapter(plan[index].kind)] + finishFailed(error: error, adapter: kind, now: now)
    }

    /// Another client's cycle is running: this opening sends nothing at all.
    private mutating func refuseBusy(index: Int, attemptStart: MonotonicInstant, now: MonotonicInstant) -> [Action] {
        let kind = plan[index].kind
        record(index, .skipped, .withheld(.relayActive), attemptStart: attemptStart, now: now)
        decidedBy = kind
        if sent {
            // Unreachable by the permit's rule (a busy relay refuses only a trigger not yet
            // sent); if it ever happened, the trigger may have cycled the relay.
            return [.stopAdapter(kind)] + finishFailed(error: .operationTimeout, adapter: kind, now: now)
        }
        return [.stopAdapter(kind)] + finishFailed(error: .operationInProgress, adapter: nil, now: now)
    }

    /// No evidence that the trigger reached the ESP32: the next adapter may go.
    private mutating func giveUp(
        index: Int,
        attemptStart: MonotonicInstant,
        now: MonotonicInstant,
        outcome: AttemptOutcome,
        reason: AttemptReason
    ) -> [Action] {
        if releaseSeen {
            return fail(
                index: index,
                attemptStart: attemptStart,
                now: now,
                outcome: .timeout,
                reason: .releaseWithoutActivation,
                error: .operationTimeout
            )
        }
        if sent, unwatched, outcome == .noAnswer, index + 1 < plan.count {
            // Silence nobody watched for: the ESP32 may have cycled and its answer been
            // lost on the way back. Another trigger could cycle the relay twice.
            return fail(
                index: index,
                attemptStart: attemptStart,
                now: now,
                outcome: .noAnswer,
                reason: .unwatchedSilence(reason, next: plan[index + 1].kind),
                error: .operationTimeout
            )
        }
        let kind = plan[index].kind
        record(index, outcome, reason, attemptStart: attemptStart, now: now)
        if !sent, answeredFor != nil {
            // The relay answered an earlier trigger: evidence, so no other adapter goes.
            return [.stopAdapter(kind)] + exhausted(now: now)
        }
        return [.stopAdapter(kind)] + startAdapter(at: index + 1, now: now)
    }

    private mutating func exhausted(now: MonotonicInstant) -> [Action] {
        // A trigger that left and was not refused at once by the network may have cycled
        // the relay: 124, which a script must not retry blindly. 69 only when nothing
        // can have reached it (docs/CONTRACT.md#exit-codes).
        if let unanswered = tried.last(where: { $0.triggerSent && $0.outcome != .unreachable }) {
            return finishFailed(error: .operationTimeout, adapter: unanswered.adapter, now: now)
        }
        let error: GateKeeperError
        if let only = forced {
            // A forced adapter that is not configured, or cannot run as configured, is a
            // configuration problem (exit 78), not a network one.
            let last = attempts.last(where: { $0.adapter == only })?.outcome
            let misconfigured = last == .misconfigured || last == .skipped
            error = misconfigured ? .configurationMissing : .connectionFailed(only)
        } else {
            error = .allAdaptersFailed
        }
        return finishFailed(error: error, adapter: nil, now: now)
    }

    private mutating func finishFailed(error: GateKeeperError, adapter: AdapterKind?, now: MonotonicInstant) -> [Action]
    {
        let end = FailedOpening(
            error: error,
            adapter: adapter,
            startedAt: startedAt,
            now: now,
            resetDelay: resetDelay,
            attempts: attempts
        )
        phase = .resetting(resetAt: end.resetAt, shown: end.shown)
        return [.stateChanged(end.shown, adapter: adapter), .finished(end.result, resetAt: end.resetAt)]
    }
}
