import GateCore
import Logging
import Plumbing

/// Who asks for an opening, and how.
public struct OpeningRequest: Sendable {
    /// `cli`, `button`, `widget`, `homeassistant`… (status file, history, logs).
    public var source: String
    public var selection: AdapterSelection
    /// Skip the cooldown (never the lock, never a busy relay).
    public var force: Bool
    /// The uid of the process that asked, when not this one's (a control socket
    /// client, from `SO_PEERCRED`): what the history records.
    public var requester: UInt32?
    /// Whether the process that asked has gone away (a control socket client that
    /// hung up): asked by the permit right before a trigger, which never leaves for
    /// an opener that is gone (docs/CONTRACT.md#the-control-socket).
    public var openerGone: (@Sendable () -> Bool)?

    public init(
        source: String,
        selection: AdapterSelection = .auto,
        force: Bool = false,
        requester: UInt32? = nil,
        openerGone: (@Sendable () -> Bool)? = nil
    ) {
        self.source = source
        self.selection = selection
        self.force = force
        self.requester = requester
        self.openerGone = openerGone
    }
}

/// The one opening pipeline every opener calls (`gate open`, the button, and
/// the daemon's other openers): a busy relay refused, the lock, the cooldown,
/// the plan, the attempts under one `TriggerPermit`, the status file, the
/// history (docs/CONTRACT.md#one-opening, docs/CONTRACT.md#runtime-files).
///
/// The machine decides; this only does what it is told (start an adapter, stop
/// it, show a state) and feeds it every event with its arrival time, whatever
/// channel it came from.
public struct OpeningPipeline: Sendable {
    public let paths: RuntimePaths
    let adapters: AdapterFactory
    /// The daemon's warm link: its status messages are evidence for this opening.
    let statusFeed: (any StatusFeed)?
    let interfaces: @Sendable () -> Result<[InterfaceAddress], SystemError>
    let clock: any OpeningClock
    let logger: Logger

    public init(
        paths: RuntimePaths,
        adapters: AdapterFactory,
        statusFeed: (any StatusFeed)? = nil,
        logger: Logger,
        interfaces: @escaping @Sendable () -> Result<[InterfaceAddress], SystemError> = InterfaceTable.current,
        clock: any OpeningClock = SystemOpeningClock()
    ) {
        self.paths = paths
        self.adapters = adapters
        self.statusFeed = statusFeed
        self.interfaces = interfaces
        self.clock = clock
        self.logger = logger
    }

    /// How long after an attempt's deadline the pipeline asks it to drain and finish,
    /// and then how long it waits for that before deciding without it. Adapters
    /// report their own deadline (with better words); this is the net for one stuck
    /// in a blocking call (`getaddrinfo`, a TCP connect), which the permit already
    /// keeps from sending.
    static let overdueGrace = Duration.milliseconds(250)

    /// Runs one opening; `onStateChange` sees every state it goes through, `onAttempt`
    /// each adapter as its attempt starts (for a display: no state is announced before
    /// a trigger left).
    public func open(
        config: GateConfig,
        request: OpeningRequest,
        onStateChange: @escaping (GateState, AdapterKind?) -> Void = { _, _ in },
        onAttempt: @escaping (AdapterKind) -> Void = { _ in }
    ) async -> OpeningResult {
        var logger = self.logger
        logger[metadataKey: "source"] = "\(request.source)"
        if config.esp32.protocolVersion == .v2 {
            // Signed frames; plain `1`/`0` are neither evidence nor a busy relay there.
            return await openV2(
                config: config,
                request: request,
                logger: logger,
                onStateChange: onStateChange,
                onAttempt: onAttempt
            )
        }
        if let statusFeed, statusFeed.relayActive {
            logger.notice("opening refused: the relay is active (another client's cycle)")
            return OpeningResult(
                error: .operationInProgress,
                adapter: nil,
                duration: .zero,
                attempts: [],
                explanation: Withholding.relayActive.description
            )
        }
        let udpLink = udpLink(config: config, selection: request.selection, logger: logger)
        let plan = AdapterPlan.make(config: config, selection: request.selection, udpLink: udpLink)
        // Evidence on every path: without a watch of the caller's (the daemon's link), the
        // opening makes its own on the status topic, for all of its attempts.
        let watch = statusFeed == nil ? adapters.watch(config: config, plan: plan, logger: logger) : nil
        defer { watch?.stop() }
        let recorder: OpeningRecorder
        switch begin(config: config, request: request, logger: logger) {
        case .success(let taken): recorder = taken
        case .failure(let refused): return refused.result
        }
        if let watch, plan.adapters.first?.kind == .udp {
            await Self.waitUntilLive(watch, for: Self.watchWait)
        }
        let run = OpeningRun(
            pipeline: self,
            config: config,
            selection: request.selection,
            openerGone: request.openerGone,
            plan: plan,
            udpLink: udpLink,
            feed: statusFeed ?? watch,
            watch: watch,
            recorder: recorder,
            logger: logger
        )
        let result = await run.run(onStateChange: onStateChange, onAttempt: onAttempt)
        recorder.finished(result.result, resetAfter: result.resetAfter)
        return result.result
    }

    /// An opening refused before anything ran (lock, cooldown, folders): its result.
    struct Refused: Error {
        let result: OpeningResult
    }

    /// Takes the lock and checks the cooldown; the refusal's result otherwise.
    func begin(config: GateConfig, request: OpeningRequest, logger: Logger) -> Result<OpeningRecorder, Refused> {
        do throws(OpeningRecorder.Refusal) {
            return .success(
                try OpeningRecorder.begin(
                    paths: paths,
                    source: request.source,
                    runtime: config.runtime,
                    force: request.force,
                    requester: request.requester,
                    logger: logger
                )
            )
        } catch let refusal {
            logger.notice("opening refused", metadata: ["reason": "\(refusal.message)"])
            let error: GateKeeperError
            switch refusal {
            case .inProgress, .cooldown: error = .operationInProgress
            case .unavailable: error = .configurationMissing
            }
            let result = OpeningResult(
                error: error,
                adapter: nil,
                duration: .zero,
                attempts: [],
                explanation: refusal.message
            )
            return .failure(Refused(result: result))
        }
    }

    /// A machine stopped without a result (`OpeningResult.undecided`), v1's or v2's.
    func undecided(
        attempts: [AttemptRecord],
        since openingStart: MonotonicInstant,
        config: GateConfig,
        logger: Logger
    ) -> (result: OpeningResult, resetAfter: Duration?) {
        logger.error("opening stopped without a result")
        let duration = clock.now().duration(since: openingStart)
        return (.undecided(attempts: attempts, duration: duration), .seconds(fromConfig: config.runtime.resetDelay))
    }

    /// A relay cycle someone else caused, seen on the status topic (the daemon's
    /// link): recorded as an opening with source `elsewhere` under the same lock,
    /// status file and history. Holding the returned recorder holds the lock.
    public func beginElsewhere(config: GateConfig) -> Result<OpeningRecorder, OpeningRecorder.Refusal> {
        Result { () throws(OpeningRecorder.Refusal) in
            try OpeningRecorder.begin(
                paths: paths,
                source: "elsewhere",
                runtime: config.runtime,
                force: true,
                logger: logger
            )
        }
    }

    /// Silence after a trigger says the trigger was lost only when the status topic was
    /// watched from before it left until now (docs/CONTRACT.md#evidence-and-time): the
    /// machine hears when it was not, before it hears of the silence.
    static func silence(_ event: AdapterEvent, attempt: Int, permit: TriggerPermit) -> Silence {
        switch event {
        case .deadlineReached, .lost:
            guard permit.sent(attempt: attempt) else { return .notSilence }
            return permit.watchHeld(attempt: attempt) ? .watched : .unwatched
        case .sent, .relay, .invalid, .unreachable, .misconfigured, .withheld, .signed:
            return .notSilence
        }
    }

    enum Silence {
        /// Not the silence after a trigger.
        case notSilence
        /// After a trigger, under a watch that held: another adapter may follow.
        case watched
        /// After a trigger that nothing watched for: none may.
        case unwatched
    }

    /// How long the watch may take to catch up (`StatusFeed.sync`) before silence is
    /// judged; past it the watch counts as broken.
    static let syncLimit = Duration.seconds(1)

    /// How long a UDP-first opening waits for its own status watch's SUBACK before the
    /// trigger leaves: a few milliseconds with a broker on the LAN. Past it the trigger
    /// goes anyway, and a silent UDP attempt then ends the opening (124) instead of
    /// falling back (docs/CONTRACT.md#evidence-and-time).
    static let watchWait = Duration.milliseconds(500)

    static func waitUntilLive(_ watch: MQTTLink, for limit: Duration) async {
        let deadline = MonotonicClock.now() + limit
        while watch.liveSession == nil, !watch.hasFailed, MonotonicClock.now() < deadline {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// What an attempt that ended without its last word amounts to: it sent nothing,
    /// or its trigger went unanswered.
    static func silentEnd(_ ticket: AttemptTicket, permit: TriggerPermit) -> AdapterEvent {
        let sent = permit.close(attempt: ticket.attempt)
        if ticket.now() >= ticket.deadline {
            return sent ? .deadlineReached : .withheld(.budgetSpent(during: ticket.whatItWasDoing))
        }
        return sent
            ? .lost("the adapter stopped without an answer")
            : .unreachable("the adapter stopped before sending (\(ticket.whatItWasDoing))")
    }

    /// At the deadline the permit closes (nothing is sent past it, whatever the
    /// attempt's thread is doing); after a grace the pipeline asks the attempt to
    /// finish, and after another decides without it.
    static func overdueTimer(
        attempt: Int,
        deadline: MonotonicInstant,
        permit: TriggerPermit,
        inputs: AsyncStream<OpeningInput>.Continuation,
        clock: any OpeningClock
    ) -> Task<Void, Never> {
        Task {
            do {
                try await clock.sleep(until: deadline)
                permit.close(attempt: attempt)
                try await clock.sleep(until: deadline + overdueGrace)
                inputs.yield(.overdue(attempt: attempt, stage: 1))
                try await clock.sleep(until: deadline + overdueGrace + overdueGrace)
                inputs.yield(.overdue(attempt: attempt, stage: 2))
            } catch {
                return
            }
        }
    }

    /// Where the ESP32's address is, when it is an IP literal; nil for a host name,
    /// which the UDP attempt resolves within its own budget.
    func udpLink(config: GateConfig, selection: AdapterSelection, logger: Logger) -> LinkVerdict? {
        guard let udp = config.udp, selection != .mqtt, let ip = IPAddress(literal: udp.host) else { return nil }
        return LinkCheck.verdict(for: ip, interfaces: interfaces, logger: logger)
    }

    static func metadata(finished record: AttemptRecord) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "adapter": "\(record.adapter)", "outcome": "\(record.outcome.rawValue)",
            "latency_ms": "\(record.duration?.milliseconds ?? 0)", "trigger_sent": "\(record.triggerSent)",
        ]
        if let reason = record.reason { metadata["reason"] = "\(reason)" }
        return metadata
    }
}
