/// The complete-cycle state machine of SPEC §2 for one opening.
///
/// A value type: the caller feeds it events (each stamped with the time it
/// happened) and performs the actions it returns. It never sends a trigger
/// itself, so every rule about *when* a second adapter may be started lives
/// here, where it can be tested without a network.
///
/// Never trigger twice: the machine starts the next adapter only when the
/// current one ended without any evidence that its trigger reached the ESP32
/// (nothing came back within the budget, or the network refused at once).
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
        /// The reset delay after a timeout or an error has passed.
        case resetDelayElapsed(at: MonotonicInstant)
    }

    public enum Action: Sendable, Hashable {
        /// Start the adapter: send one trigger and report what comes back until `deadline`.
        case startAdapter(AdapterKind, deadline: MonotonicInstant)
        /// Stop listening on the adapter: its attempt is over.
        case stopAdapter(AdapterKind)
        case stateChanged(GateState, adapter: AdapterKind?)
        /// The opening is decided. After a failure, `resetAt` is when `ready` returns.
        case finished(OpeningResult, resetAt: MonotonicInstant?)
    }

    enum Phase: Sendable, Hashable {
        case idle
        /// Trigger sent on `plan[index]`, waiting for `1`.
        case triggering(index: Int, startedAt: MonotonicInstant, deadline: MonotonicInstant)
        /// `1` seen on `plan[index]`, waiting for `0`.
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
    private(set) var phase: Phase = .idle
    private var startedAt = MonotonicInstant(nanoseconds: 0)
    /// Adapters left out before the opening.
    private let skipped: [AttemptRecord]
    /// Adapters tried so far, in the order they ran.
    private var tried: [AttemptRecord] = []

    /// Every adapter's part, in adapter order (UDP, then MQTT), skipped ones included.
    public var attempts: [AttemptRecord] {
        let order = AdapterKind.allCases
        return (skipped + tried).sorted {
            (order.firstIndex(of: $0.adapter) ?? 0) < (order.firstIndex(of: $1.adapter) ?? 0)
        }
    }

    /// - Parameters:
    ///   - plan: adapters to try, in order.
    ///   - skipped: adapters left out before the opening, with their reasons; they
    ///     are listed in `attempts` in adapter order with the tried ones.
    public init(plan: [PlannedAdapter], skipped: [AttemptRecord] = [], resetDelay: Duration, forced: AdapterKind? = nil) {
        self.plan = plan
        self.skipped = skipped
        self.resetDelay = resetDelay
        self.forced = forced
    }

    /// The state to show for the machine as it is now.
    public var state: GateState {
        switch phase {
        case .idle, .done: return .ready
        case .triggering: return .triggering
        case .waitingForRelayClose: return .waitingForRelayClose
        case .resetting(_, let shown): return shown
        }
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .start(let now):
            guard case .idle = phase else { return [] }
            startedAt = now
            return startAdapter(at: 0, now: now)

        case .adapter(let kind, let adapterEvent, let now):
            return handleAdapter(kind, adapterEvent, now: now)

        case .resetDelayElapsed(let now):
            guard case .resetting(let resetAt, _) = phase, now >= resetAt else { return [] }
            phase = .done
            return [.stateChanged(.ready, adapter: nil)]
        }
    }

    private mutating func handleAdapter(_ kind: AdapterKind, _ event: AdapterEvent, now: MonotonicInstant) -> [Action] {
        switch phase {
        case .idle, .resetting, .done:
            // A byte after the decision (a duplicate `0`, a late answer) changes nothing.
            return []

        case .triggering(let index, let attemptStart, let deadline):
            guard plan[index].kind == kind else { return [] }
            if now >= deadline, event.isAnswer {
                // The budget ran out before this answer: the deadline decides, the late answer is ignored.
                return handleAdapter(kind, .deadlineReached, now: deadline)
            }
            switch event {
            case .sent:
                return []
            case .relay(.activated):
                phase = .waitingForRelayClose(index: index, startedAt: attemptStart, deadline: deadline)
                return [.stateChanged(.waitingForRelayClose, adapter: kind)]
            case .relay(.released):
                return fail(index: index, attemptStart: attemptStart, now: now, outcome: .invalidResponse,
                            reason: "the ESP32 reported the release (0) before the activation (1)", error: .invalidResponse)
            case .invalid(let description):
                return fail(index: index, attemptStart: attemptStart, now: now, outcome: .invalidResponse,
                            reason: description, error: .invalidResponse)
            case .unreachable(let reason):
                return giveUp(index: index, attemptStart: attemptStart, now: now, outcome: .unreachable, reason: reason)
            case .misconfigured(let reason):
                return giveUp(index: index, attemptStart: attemptStart, now: now, outcome: .misconfigured, reason: reason)
            case .deadlineReached:
                let reason = "no answer within \(plan[index].budget.humanReadable)"
                return giveUp(index: index, attemptStart: attemptStart, now: now, outcome: .noAnswer, reason: reason)
            }

        case .waitingForRelayClose(let index, let attemptStart, let deadline):
            guard plan[index].kind == kind else { return [] }
            if now >= deadline, event.isAnswer {
                return handleAdapter(kind, .deadlineReached, now: deadline)
            }
            switch event {
            case .sent, .relay(.activated):
                // A repeated `1` while the relay is held is harmless (SPEC §1).
                return []
            case .relay(.released):
                return succeed(index: index, attemptStart: attemptStart, now: now)
            case .invalid(let description):
                return fail(index: index, attemptStart: attemptStart, now: now, outcome: .invalidResponse,
                            reason: description, error: .invalidResponse)
            case .unreachable(let reason):
                // The relay is known to be on: no fallback, whatever broke afterwards.
                return fail(index: index, attemptStart: attemptStart, now: now, outcome: .timeout,
                            reason: "relay activated (1), then the link failed before the release: \(reason)",
                            error: .operationTimeout)
            case .misconfigured(let reason):
                return fail(index: index, attemptStart: attemptStart, now: now, outcome: .timeout,
                            reason: "relay activated (1), then: \(reason)", error: .operationTimeout)
            case .deadlineReached:
                let reason = "relay activated (1) but no release (0) within \(plan[index].budget.humanReadable)"
                return fail(index: index, attemptStart: attemptStart, now: now, outcome: .timeout,
                            reason: reason, error: .operationTimeout)
            }
        }
    }

    private mutating func startAdapter(at index: Int, now: MonotonicInstant) -> [Action] {
        guard index < plan.count else {
            return exhausted(now: now)
        }
        let deadline = now + plan[index].budget
        phase = .triggering(index: index, startedAt: now, deadline: deadline)
        // The trigger first, the announcement after: `triggering` means "trigger sent"
        // (SPEC §2), and writing the status file must never delay the relay.
        return [
            .startAdapter(plan[index].kind, deadline: deadline),
            .stateChanged(.triggering, adapter: plan[index].kind),
        ]
    }

    private mutating func succeed(index: Int, attemptStart: MonotonicInstant, now: MonotonicInstant) -> [Action] {
        let kind = plan[index].kind
        tried.append(AttemptRecord(adapter: kind, outcome: .success, reason: nil, duration: now.duration(since: attemptStart)))
        phase = .done
        let duration = now.duration(since: startedAt)
        let result = OpeningResult(
            error: nil, adapter: kind, duration: duration, attempts: attempts,
            message: "relay cycle confirmed via \(kind) in \(duration.milliseconds) ms"
        )
        return [.stopAdapter(kind), .stateChanged(.ready, adapter: kind), .finished(result, resetAt: nil)]
    }

    /// The ESP32 answered but the cycle failed: no other adapter may be tried.
    private mutating func fail(
        index: Int, attemptStart: MonotonicInstant, now: MonotonicInstant,
        outcome: AttemptOutcome, reason: String, error: GateKeeperError
    ) -> [Action] {
        let kind = plan[index].kind
        tried.append(AttemptRecord(adapter: kind, outcome: outcome, reason: reason, duration: now.duration(since: attemptStart)))
        // Said out loud, so nobody wonders why the fallback stayed idle.
        for later in plan[(index + 1)...] {
            tried.append(AttemptRecord(
                adapter: later.kind, outcome: .skipped,
                reason: "not tried: the ESP32 answered over \(kind), and a second trigger could move the gate twice",
                duration: nil
            ))
        }
        return [.stopAdapter(kind)] + finishFailed(error: error, adapter: kind, now: now, message: "\(kind): \(reason)")
    }

    /// No evidence that the trigger reached the ESP32: the next adapter may go.
    private mutating func giveUp(
        index: Int, attemptStart: MonotonicInstant, now: MonotonicInstant, outcome: AttemptOutcome, reason: String
    ) -> [Action] {
        let kind = plan[index].kind
        tried.append(AttemptRecord(adapter: kind, outcome: outcome, reason: reason, duration: now.duration(since: attemptStart)))
        return [.stopAdapter(kind)] + startAdapter(at: index + 1, now: now)
    }

    private mutating func exhausted(now: MonotonicInstant) -> [Action] {
        let reasons = attempts.map { "\($0.adapter): \($0.reason ?? $0.outcome.rawValue)" }.joined(separator: "; ")
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
        let message = attempts.isEmpty ? "no adapter is configured" : reasons
        return finishFailed(error: error, adapter: nil, now: now, message: message)
    }

    private mutating func finishFailed(error: GateKeeperError, adapter: AdapterKind?, now: MonotonicInstant, message: String) -> [Action] {
        let resetAt = now + resetDelay
        let shown: GateState = error == .operationTimeout ? .timeout : .error
        phase = .resetting(resetAt: resetAt, shown: shown)
        let result = OpeningResult(error: error, adapter: adapter, duration: now.duration(since: startedAt), attempts: attempts, message: message)
        return [.stateChanged(shown, adapter: adapter), .finished(result, resetAt: resetAt)]
    }
}

extension AdapterEvent {
    /// Something the ESP32 said. Only these are subject to the budget: an adapter's
    /// own account of a failure (why it could not connect) stays true after it.
    var isAnswer: Bool {
        switch self {
        case .relay, .invalid: return true
        case .sent, .unreachable, .misconfigured, .deadlineReached: return false
        }
    }
}
