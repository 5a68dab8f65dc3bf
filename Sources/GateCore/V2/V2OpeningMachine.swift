/// The machine of one protocol v2 opening (docs/CONTRACT.md#protocol-v2-openings): events
/// in, each stamped with its arrival, actions out; the pipeline does the I/O.
///
/// One opening builds one frame and sends the same 32 bytes on each transport in turn
/// while its cycle is unconfirmed: the ESP32 fires on the first copy and only repeats its
/// answer to later ones, so a fallback can never be a second activation. Only genuine
/// replies for the frame count (`AdapterEvent.signed`): `0x90` then `0x91` is a success,
/// `0x93` a busy relay (75), `0x9E` one new frame with the ESP32's epoch. What the plain
/// status topic says, and anything unsigned, never reaches this machine.
public struct V2OpeningMachine: Sendable {
    public enum Event: Sendable, Hashable {
        /// `epoch`: the ESP32's epoch already known (the retained announcement, the warm
        /// link); nil when a status query must learn it first.
        case start(epoch: UInt32?, at: MonotonicInstant)
        /// The running status query's answer.
        case epochLearnt(UInt32, at: MonotonicInstant)
        /// The running status query got no genuine answer (why, in words).
        case epochUnknown(String, at: MonotonicInstant)
        case adapter(AdapterKind, AdapterEvent, at: MonotonicInstant)
        /// No frame could be built (no key, unusable counters): why, in words.
        case frameUnavailable(String, at: MonotonicInstant)
        case resetDelayElapsed(at: MonotonicInstant)
        /// Stopped from outside; `frameSent`: the permit's record for the running attempt.
        case stopped(frameSent: Bool, at: MonotonicInstant)
    }

    /// Which frame an attempt sends.
    public enum Frame: Sendable, Hashable {
        /// Draw a counter and build a new frame with this epoch (the first, or the one
        /// retry after `0x9E`).
        case new(epoch: UInt32)
        /// The current frame again, byte for byte (a fallback).
        case same
    }

    public enum Action: Sendable, Hashable {
        /// Ask the ESP32's epoch with one signed status query over `kind`, answered by
        /// `deadline`.
        case queryEpoch(AdapterKind, deadline: MonotonicInstant)
        case startAdapter(AdapterKind, frame: Frame, deadline: MonotonicInstant)
        case stopAdapter(AdapterKind)
        case stateChanged(GateState, adapter: AdapterKind?)
        case finished(OpeningResult, resetAt: MonotonicInstant?)
    }

    enum Phase: Sendable, Hashable {
        case idle
        case learning(index: Int, startedAt: MonotonicInstant)
        case attempt(index: Int, startedAt: MonotonicInstant)
        case resetting(resetAt: MonotonicInstant, shown: GateState)
        case done
    }

    public let plan: [OpeningMachine.PlannedAdapter]
    public let resetDelay: Duration
    public let forced: AdapterKind?
    private let skipped: [AttemptRecord]
    private(set) var phase: Phase = .idle
    private var startedAt = MonotonicInstant(nanoseconds: 0)
    private var tried: [AttemptRecord] = []
    /// Frames built so far: 1, or 2 after the retry.
    private var framesBuilt = 0
    /// Copies of the current frame that left, on any transport.
    private var copies = 0
    /// Of those, the ones whose fate is open: not refused at once by the network, not
    /// answered by a reply saying that nothing moved. While one is, the relay may have
    /// cycled (124 rather than 69), and a `0x9E` to another copy allows no new frame.
    private var liveCopies = 0
    /// The running attempt's copy left.
    private var sent = false
    private var unsettled: Bool { liveCopies > 0 }
    /// The signed `0x90` for the current frame was seen.
    private var activated = false
    private var decidedBy: AdapterKind?

    public init(
        plan: [OpeningMachine.PlannedAdapter],
        skipped: [AttemptRecord] = [],
        resetDelay: Duration,
        forced: AdapterKind? = nil
    ) {
        self.plan = plan
        self.skipped = skipped
        self.resetDelay = resetDelay
        self.forced = forced
    }

    /// The attempts in adapter order (skipped ones included; an adapter that ran twice,
    /// for the retry after `0x9E`, is listed twice), up to the one that decided.
    public var attempts: [AttemptRecord] {
        let order = AdapterKind.allCases
        let all = (skipped + tried).enumerated().sorted {
            let left = order.firstIndex(of: $0.element.adapter) ?? 0
            let right = order.firstIndex(of: $1.element.adapter) ?? 0
            return left != right ? left < right : $0.offset < $1.offset
        }.map(\.element)
        guard let decidedBy, let last = all.lastIndex(where: { $0.adapter == decidedBy }) else { return all }
        return Array(all[...last])
    }

    /// The adapter whose attempt or status query runs now.
    public var running: AdapterKind? {
        switch phase {
        case .learning(let index, _), .attempt(let index, _): return plan[index].kind
        case .idle, .resetting, .done: return nil
        }
    }

    /// Whether the running step is a status query rather than an attempt.
    public var learning: Bool {
        if case .learning = phase { return true }
        return false
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .start(let epoch, let now):
            guard case .idle = phase else { return [] }
            startedAt = now
            guard let epoch else { return query(at: 0, now: now) }
            return startAttempt(at: 0, frame: .new(epoch: epoch), now: now)
        case .epochLearnt(let epoch, let now):
            guard case .learning(let index, _) = phase else { return [] }
            // Sent first where the ESP32 answered.
            return startAttempt(at: index, frame: .new(epoch: epoch), now: now)
        case .epochUnknown(let why, let now):
            guard case .learning(let index, let queryStart) = phase else { return [] }
            record(index, .unreachable, .noEpoch(why), start: queryStart, now: now, sent: false)
            return query(at: index + 1, now: now)
        case .adapter(let kind, let adapterEvent, let now):
            guard case .attempt(let index, let attemptStart) = phase, plan[index].kind == kind else { return [] }
            return handleAdapter(adapterEvent, index: index, attemptStart: attemptStart, now: now)
        case .frameUnavailable(let why, let now):
            return frameUnavailable(why, now: now)
        case .resetDelayElapsed(let now):
            guard case .resetting(let resetAt, _) = phase, now >= resetAt else { return [] }
            phase = .done
            return [.stateChanged(.ready, adapter: nil)]
        case .stopped(let frameSent, let now):
            return stop(frameSent: frameSent, now: now)
        }
    }

    private mutating func handleAdapter(
        _ event: AdapterEvent,
        index: Int,
        attemptStart: MonotonicInstant,
        now: MonotonicInstant
    ) -> [Action] {
        let budget = plan[index].budget
        switch event {
        case .sent:
            guard !sent else { return [] }
            sent = true
            copies += 1
            liveCopies += 1
            // `triggering` once, when the opening's first frame leaves.
            let first = copies == 1 && framesBuilt == 1
            return first ? [.stateChanged(.triggering, adapter: plan[index].kind)] : []
        case .signed(let kind, let epoch):
            return handleReply(kind, epoch: epoch, index: index, attemptStart: attemptStart, now: now)
        case .relay, .invalid:
            // Unsigned: never evidence under v2 (v2 adapters do not even report it).
            return []
        case .unreachable(let words):
            // Refused by the network: this copy reached nobody.
            if sent { liveCopies -= 1 }
            return next(after: index, .unreachable, .adapter(words), start: attemptStart, now: now)
        case .lost(let words):
            return next(
                after: index,
                sent ? .noAnswer : .unreachable,
                sent ? .lostAfterTrigger(words) : .adapter(words),
                start: attemptStart,
                now: now
            )
        case .misconfigured(let words):
            return next(after: index, .misconfigured, .adapter(words), start: attemptStart, now: now)
        case .withheld(.openerGone):
            record(index, .unreachable, .withheld(.openerGone), start: attemptStart, now: now, sent: sent)
            return [.stopAdapter(plan[index].kind)] + exhausted(now: now)
        case .withheld(let why):
            return next(after: index, .unreachable, .withheld(why), start: attemptStart, now: now)
        case .deadlineReached:
            // The same frame on the next transport is safe: the ESP32 only repeats its
            // answer to a counter it has seen.
            let outcome: AttemptOutcome = activated ? .timeout : (sent ? .noAnswer : .unreachable)
            let reason: AttemptReason =
                activated
                ? .noSignedRelease(budget: budget)
                : (sent ? .noSignedAnswer(budget: budget) : .withheld(.budgetSpent(during: "sending")))
            return next(after: index, outcome, reason, start: attemptStart, now: now)
        }
    }

    private mutating func handleReply(
        _ kind: V2ReplyKind,
        epoch: UInt32,
        index: Int,
        attemptStart: MonotonicInstant,
        now: MonotonicInstant
    ) -> [Action] {
        let adapter = plan[index].kind
        switch kind {
        case .relayOn:
            guard !activated else { return [] }
            activated = true
            return [.stateChanged(.waitingForRelayClose, adapter: adapter)]
        case .relayOff:
            // A `0x91` alone (its `0x90` lost) is no confirmation: the same frame on the
            // next transport brings both again.
            guard activated else { return [] }
            record(index, .success, nil, start: attemptStart, now: now, sent: sent)
            decidedBy = adapter
            phase = .done
            let result = OpeningResult(
                error: nil,
                adapter: adapter,
                duration: now.duration(since: startedAt),
                attempts: attempts
            )
            return [.stopAdapter(adapter), .stateChanged(.ready, adapter: adapter), .finished(result, resetAt: nil)]
        case .busy:
            // The ESP32 took the counter and moved nothing; every copy gets that answer.
            guard !activated else { return [] }
            liveCopies = 0
            return decide(
                index,
                .skipped,
                .busy,
                error: .operationInProgress,
                adapter: nil,
                start: attemptStart,
                now: now
            )
        case .staleEpoch:
            return staleEpoch(epoch, index: index, attemptStart: attemptStart, now: now)
        case .status, .statusV1Accepted:
            // An answer to a status query, not to this frame.
            return []
        }
    }

    /// `0x9E`: nothing moved for the copy it answers. One new frame with the ESP32's epoch,
    /// unless this was already the new one (69), or another copy of the frame went
    /// unanswered, which may have cycled the relay before the ESP32 restarted (124).
    private mutating func staleEpoch(
        _ epoch: UInt32,
        index: Int,
        attemptStart: MonotonicInstant,
        now: MonotonicInstant
    ) -> [Action] {
        guard !activated else { return [] }
        guard liveCopies <= 1 else {
            return decide(
                index,
                .noAnswer,
                .staleEpochAfterUnansweredCopy,
                error: .operationTimeout,
                adapter: plan[index].kind,
                start: attemptStart,
                now: now
            )
        }
        liveCopies = 0
        guard framesBuilt == 1 else {
            return decide(
                index,
                .unreachable,
                .staleEpochAgain,
                error: .allAdaptersFailed,
                adapter: nil,
                start: attemptStart,
                now: now
            )
        }
        record(index, .unreachable, .staleEpochRetried, start: attemptStart, now: now, sent: sent)
        return [.stopAdapter(plan[index].kind)] + startAttempt(at: index, frame: .new(epoch: epoch), now: now)
    }

    private mutating func query(at index: Int, now: MonotonicInstant) -> [Action] {
        guard index < plan.count else { return exhausted(now: now) }
        phase = .learning(index: index, startedAt: now)
        return [.queryEpoch(plan[index].kind, deadline: now + plan[index].budget)]
    }

    private mutating func startAttempt(at index: Int, frame: Frame, now: MonotonicInstant) -> [Action] {
        guard index < plan.count else { return exhausted(now: now) }
        if case .new = frame {
            framesBuilt += 1
            copies = 0
            liveCopies = 0
            activated = false
        }
        phase = .attempt(index: index, startedAt: now)
        sent = false
        return [.startAdapter(plan[index].kind, frame: frame, deadline: now + plan[index].budget)]
    }

    /// This attempt is over without a decision: the same frame on the next transport.
    private mutating func next(
        after index: Int,
        _ outcome: AttemptOutcome,
        _ reason: AttemptReason,
        start: MonotonicInstant,
        now: MonotonicInstant
    ) -> [Action] {
        record(index, outcome, reason, start: start, now: now, sent: sent)
        return [.stopAdapter(plan[index].kind)] + startAttempt(at: index + 1, frame: .same, now: now)
    }

    private mutating func frameUnavailable(_ why: String, now: MonotonicInstant) -> [Action] {
        switch phase {
        case .idle, .resetting, .done:
            return []
        case .learning(let index, let start), .attempt(let index, let start):
            record(index, .misconfigured, .adapter(why), start: start, now: now, sent: false)
            let error: GateKeeperError = unsettled ? .operationTimeout : .configurationMissing
            decidedBy = plan[index].kind
            return [.stopAdapter(plan[index].kind)] + finishFailed(error: error, adapter: nil, now: now)
        }
    }

    private mutating func stop(frameSent: Bool, now: MonotonicInstant) -> [Action] {
        switch phase {
        case .idle, .resetting, .done:
            return []
        case .learning(let index, _):
            tried.append(AttemptRecord(adapter: plan[index].kind, outcome: .skipped, reason: .stopped, duration: nil))
            return [.stopAdapter(plan[index].kind)] + exhausted(now: now)
        case .attempt(let index, let start):
            if frameSent, !sent {
                sent = true
                liveCopies += 1
            }
            record(index, sent ? .noAnswer : .skipped, .stopped, start: start, now: now, sent: sent)
            return [.stopAdapter(plan[index].kind)] + exhausted(now: now)
        }
    }

    /// The plan ran out: 124 when a copy may have cycled the relay, else 69 (or the forced
    /// adapter's own failure), as for v1 (docs/CONTRACT.md#exit-codes).
    private mutating func exhausted(now: MonotonicInstant) -> [Action] {
        if unsettled {
            let adapter = tried.last(where: \.triggerSent)?.adapter
            return finishFailed(error: .operationTimeout, adapter: adapter, now: now)
        }
        let error: GateKeeperError
        if let only = forced {
            let last = attempts.last(where: { $0.adapter == only })?.outcome
            error = last == .misconfigured || last == .skipped ? .configurationMissing : .connectionFailed(only)
        } else {
            error = .allAdaptersFailed
        }
        return finishFailed(error: error, adapter: nil, now: now)
    }

    /// A reply decided the opening: no other transport.
    private mutating func decide(
        _ index: Int,
        _ outcome: AttemptOutcome,
        _ reason: AttemptReason,
        error: GateKeeperError,
        adapter: AdapterKind?,
        start: MonotonicInstant,
        now: MonotonicInstant
    ) -> [Action] {
        record(index, outcome, reason, start: start, now: now, sent: sent)
        decidedBy = plan[index].kind
        return [.stopAdapter(plan[index].kind)] + finishFailed(error: error, adapter: adapter, now: now)
    }

    private mutating func record(
        _ index: Int,
        _ outcome: AttemptOutcome,
        _ reason: AttemptReason?,
        start: MonotonicInstant,
        now: MonotonicInstant,
        sent: Bool
    ) {
        tried.append(
            AttemptRecord(
                adapter: plan[index].kind,
                outcome: outcome,
                reason: reason,
                duration: now.duration(since: start),
                triggerSent: sent
            )
        )
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
