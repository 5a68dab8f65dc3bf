import GateCore
import Logging

/// Runs one opening: plans the adapters, drives the state machine with their
/// events, and reports each state change to the caller.
///
/// The machine decides; this type only does what it is told: start an adapter,
/// stop it, show a state. That split is what keeps "never trigger twice" in one
/// testable place.
public struct Opener: Sendable {
    public typealias AdapterFactory = @Sendable (AdapterKind, GateConfig) -> (any GateAdapter)?

    public let config: GateConfig
    public let selection: AdapterSelection
    let logger: Logger
    let makeAdapter: AdapterFactory
    let interfaces: @Sendable () -> Result<[InterfaceAddress], SystemError>

    /// - Parameter makeAdapter: builds the adapter for a kind other than UDP (the UDP
    ///   adapter needs the address resolved during planning, so it is built here).
    public init(
        config: GateConfig,
        selection: AdapterSelection,
        logger: Logger,
        makeAdapter: @escaping AdapterFactory,
        interfaces: @escaping @Sendable () -> Result<[InterfaceAddress], SystemError> = InterfaceTable.current
    ) {
        self.config = config
        self.selection = selection
        self.logger = logger
        self.makeAdapter = makeAdapter
        self.interfaces = interfaces
    }

    /// What an opening ended with, and when `ready` returns after a failure.
    public struct Report: Sendable {
        public var result: OpeningResult
        /// How long to stay in `timeout`/`error` after the result; `nil` on success.
        public var resetAfter: Duration?
    }

    public func open(onStateChange: (GateState, AdapterKind?) -> Void) async -> Report {
        let openingStart = MonotonicClock.now()
        var udpTarget: SocketAddress?
        var udpLink: Result<LinkVerdict, ResolutionFailure>?
        if let udp = config.udp, selection != .mqtt {
            switch HostResolver.resolve(host: udp.host, port: udp.port) {
            case .success(let address):
                udpTarget = address
                udpLink = .success(linkVerdict(for: address.ip))
            case .failure(let failure):
                udpLink = .failure(failure)
            }
        }
        if let udpLink, case .success(let verdict) = udpLink, let udpTarget {
            logger.debug("on-link check", metadata: ["adapter": "udp", "target": "\(udpTarget)", "verdict": "\(verdict)"])
            if selection == .udp, verdict == .offLink {
                logger.info("UDP forced although the ESP32 is not on a directly connected network", metadata: ["target": "\(udpTarget)"])
            }
        }

        let plan = AdapterPlan.make(config: config, selection: selection, udpLink: udpLink)
        for skipped in plan.skipped {
            logger.info("adapter skipped", metadata: ["adapter": "\(skipped.adapter)", "reason": "\(skipped.reason ?? "")"])
        }
        var machine = plan.machine(resetDelay: .seconds(fromConfig: config.runtime.resetDelay))
        var pending = machine.handle(.start(at: openingStart))
        var running: (kind: AdapterKind, attempt: AdapterAttempt, events: AsyncStream<AdapterEvent>.AsyncIterator, deadline: MonotonicInstant)?

        while true {
            while !pending.isEmpty {
                let action = pending.removeFirst()
                switch action {
                case .startAdapter(let kind, let deadline):
                    logger.info("trying adapter", metadata: ["adapter": "\(kind)"])
                    let attempt = Self.guarded(adapter(for: kind, udpTarget: udpTarget).attempt(deadline: deadline), deadline: deadline)
                    running = (kind, attempt, attempt.events.makeAsyncIterator(), deadline)
                case .stopAdapter(let kind):
                    if let current = running, current.kind == kind {
                        current.attempt.cancel()
                        running = nil
                    }
                    if let record = machine.attempts.last(where: { $0.adapter == kind }) {
                        // Built only when logged: the first dictionary of its type costs the
                        // runtime a lookup, on the way from the relay's `0` to the exit.
                        logger.info("adapter finished", metadata: Self.metadata(finished: record))
                    }
                case .stateChanged(let state, let adapter):
                    logger.info("state changed", metadata: ["state": "\(state.rawValue)", "adapter": "\(adapter?.rawValue ?? "none")"])
                    onStateChange(state, adapter)
                case .finished(let result, let resetAt):
                    running?.attempt.cancel()
                    return Report(result: result, resetAfter: resetAt.map { $0.duration(since: MonotonicClock.now()) })
                }
            }
            guard var current = running else {
                // Unreachable by construction: every path of the machine either runs an
                // adapter or finishes. Reported rather than trapped on an appliance.
                logger.error("opening stopped without a result")
                let result = OpeningResult(error: .allAdaptersFailed, adapter: nil, duration: MonotonicClock.now().duration(since: openingStart),
                                           attempts: machine.attempts, message: "internal error: the opening stopped without a result")
                return Report(result: result, resetAfter: .seconds(fromConfig: config.runtime.resetDelay))
            }
            let event = await current.events.next()
            running = current
            let now = MonotonicClock.now()
            let delivered: AdapterEvent
            if let event {
                delivered = event
            } else if now >= current.deadline {
                delivered = .deadlineReached
            } else {
                delivered = .unreachable("the \(current.kind) adapter stopped without an answer")
            }
            logger.trace("adapter event", metadata: ["adapter": "\(current.kind)", "event": "\(delivered)"])
            pending = machine.handle(.adapter(current.kind, delivered, at: now))
        }
    }

    private static func metadata(finished record: AttemptRecord) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "adapter": "\(record.adapter)", "outcome": "\(record.outcome.rawValue)",
            "latency_ms": "\(record.duration?.milliseconds ?? 0)",
        ]
        if let reason = record.reason { metadata["reason"] = "\(reason)" }
        return metadata
    }

    /// How long after its deadline an adapter may still report before the opener
    /// decides without it. Adapters report their own deadline with better words
    /// (which phase it caught); this is the net for one stuck in a blocking call.
    static let deadlineGrace = Duration.milliseconds(250)

    /// The adapter's events, ended by the opener's own timer if the adapter has not
    /// finished shortly after its deadline: no adapter can hold an opening past its budget.
    static func guarded(_ attempt: AdapterAttempt, deadline: MonotonicInstant) -> AdapterAttempt {
        let (stream, continuation) = AsyncStream.makeStream(of: AdapterEvent.self, bufferingPolicy: .unbounded)
        let forward = Task {
            for await event in attempt.events {
                continuation.yield(event)
            }
            continuation.finish()
        }
        let timer = Task {
            let remaining = (deadline + deadlineGrace).duration(since: MonotonicClock.now())
            try? await Task.sleep(for: remaining)
            guard !Task.isCancelled else { return }
            continuation.yield(.deadlineReached)
            continuation.finish()
        }
        return AdapterAttempt(events: stream, cancel: {
            forward.cancel()
            timer.cancel()
            attempt.cancel()
        })
    }

    private func adapter(for kind: AdapterKind, udpTarget: SocketAddress?) -> any GateAdapter {
        switch kind {
        case .udp:
            if let udpTarget {
                return UDPAdapter(target: udpTarget, logger: logger)
            }
            return FailedAdapter(kind: .udp, event: .unreachable("the ESP32's UDP address is unknown"))
        case .mqtt:
            if let adapter = makeAdapter(.mqtt, config) {
                return adapter
            }
            return FailedAdapter(kind: .mqtt, event: .misconfigured("no [mqtt] table in the configuration"))
        }
    }

    private func linkVerdict(for ip: IPAddress) -> LinkVerdict {
        if ip.isLoopback { return .loopback }
        switch interfaces() {
        case .success(let table):
            return LinkVerdict.of(ip, in: table)
        case .failure(let error):
            logger.warning("cannot read the interface table; treating the ESP32 as off-link", metadata: ["error": "\(error)"])
            return .offLink
        }
    }
}

/// An adapter that can only report why it cannot run.
struct FailedAdapter: GateAdapter {
    let kind: AdapterKind
    let event: AdapterEvent

    func attempt(deadline: MonotonicInstant) -> AdapterAttempt {
        let (stream, continuation) = AsyncStream.makeStream(of: AdapterEvent.self)
        continuation.yield(event)
        continuation.finish()
        return AdapterAttempt(events: stream, cancel: {})
    }
}
