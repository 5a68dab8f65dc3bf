import GateCore
import GateSystem
import Logging
import Plumbing
import ServiceLifecycle

/// Keeps the warm MQTT link (docs/CONTRACT.md#gate-daemon) for the running configuration,
/// and records relay cycles seen on the status topic that no local opening caused
/// as openings with source `elsewhere` (status file, history, cooldown).
///
/// A reload that changes `[mqtt]` replaces the link; one that removes it closes it.
struct LinkService: Service, CustomStringConvertible {
    static let name = "mqtt-link"
    var description: String { Self.name }
    let context: DaemonContext

    /// After an unanswered `1` went into the history, further unanswered `1`s within
    /// this window are logged but not added: a client publishing forged `1`s every few
    /// seconds leaves one history line a minute, not one per message.
    static let unansweredQuiet = Duration.seconds(60)

    enum Input: Sendable {
        case status(payload: [UInt8], at: MonotonicInstant)
        /// A local opening ended; what of its cycle it did not see may still come.
        case openingEnded(RelayObserver.Echoes, at: MonotonicInstant)
        case timer(at: MonotonicInstant)
        case config(GateConfig)
        /// The last opening in flight ended: a replacement that waited may go.
        case openingsIdle
        /// The watchdog's beat (ServiceProgress): this loop is alive.
        case beat
    }

    func run() async {
        let logger = context.logger
        let (inputs, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let reloads = Task {
            for await config in context.linkUpdates { continuation.yield(.config(config)) }
        }
        let idles = Task {
            for await _ in context.openingsIdle { continuation.yield(.openingsIdle) }
        }
        let beats = context.progress.beats { continuation.yield(.beat) }
        defer {
            reloads.cancel()
            idles.cancel()
            beats?.cancel()
        }

        var mqtt = context.config.mqtt
        var extras = DaemonContext.linkExtras(for: context.config)
        var link = startLink(mqtt, extras: extras, into: continuation)
        // The lock taken for an `elsewhere` cycle is held until its `0` or the short bound,
        // never the whole MQTT budget (RelayObserver.activeBound says why).
        var observer = RelayObserver(releaseBudget: RelayObserver.activeBound)
        var cycle: OpeningRecorder?
        var cycleBegan: MonotonicInstant?
        var lastUnansweredRecorded: MonotonicInstant?
        var unansweredSinceRecorded = 0
        var timer: Task<Void, Never>?
        /// A link for a new configuration, waiting for the opening in flight to end.
        var replacement: (mqtt: MQTTConfig?, extras: LinkExtras)?

        for await input in inputs.cancelOnGracefulShutdown() {
            var actions: [RelayObserver.Action] = []
            switch input {
            case .beat:
                if TestFault.shouldWedge(Self.name, startNs: context.startNs) {
                    logger.warning("TEST FAULT: the mqtt-link loop wedges (GATE_TEST_WEDGE)")
                    try? await gracefulShutdown()
                }
                context.progress.report(Self.name)
                continue
            case .config(let config):
                let newExtras = DaemonContext.linkExtras(for: config)
                guard !Self.sameLink(config.mqtt, mqtt) || newExtras != extras else {
                    replacement = nil
                    continue
                }
                replacement = (config.mqtt, newExtras)
                fallthrough
            case .openingsIdle:
                guard let next = replacement else { continue }
                guard let old = context.takeLinkForReplacement() else {
                    logger.info("MQTT link kept until the opening in flight ends; replaced then")
                    continue
                }
                old?.stop()
                replacement = nil
                mqtt = next.mqtt
                extras = next.extras
                logger.info(
                    mqtt == nil ? "MQTT link closed: no [mqtt] table" : "MQTT link replaced for the new configuration"
                )
                link = startLink(mqtt, extras: extras, into: continuation)
            case .timer(let at):
                actions = observer.handle(.timerFired(at: at))
            case .openingEnded(let echoes, let at):
                actions = observer.handle(.localOpeningEnded(owed: echoes, at: at))
            case .status(let payload, let at):
                guard let mqtt,
                    let report = RelayObserver.report(
                        for: MQTTStatusDecoder.event(for: payload, topic: mqtt.statusTopic)
                    )
                else { continue }
                var local = false
                var recorder: OpeningRecorder?
                // Under protocol v2 a plain `1` proves nothing and never holds the lock
                // (docs/CONTRACT.md#protocol-v2-openings): a forged one cannot lock anyone out.
                if report == .activated, observer.activeSince == nil, context.config.esp32.protocolVersion == .v1 {
                    // The lock says whether a local opening owns this cycle; holding it
                    // also keeps local openings out while the relay is held elsewhere.
                    switch context.pipeline.beginElsewhere(config: context.config) {
                    case .success(let taken): recorder = taken
                    case .failure: local = true
                    }
                }
                actions = observer.handle(.report(report, at: at, local: local))
                // Kept only for a cycle the observer follows; an echo lets the lock go.
                if actions.contains(where: { if case .began = $0 { true } else { false } }) { cycle = recorder }
            }
            for action in actions {
                switch action {
                case .began(let at):
                    cycleBegan = at
                    logger.notice(
                        "relay activated by someone else (seen on the status topic)",
                        metadata: ["source": "elsewhere"]
                    )
                    cycle?.stateChanged(.waitingForRelayClose, adapter: .mqtt)
                case .ended(let released, let duration):
                    timer?.cancel()
                    let result = Self.result(released: released, duration: duration, budget: observer.releaseBudget)
                    let now = MonotonicClock.now()
                    if released {
                        cycle?.finished(result)
                        logger.notice(
                            "\(result.message)",
                            metadata: ["source": "elsewhere", "duration_ms": "\(duration.milliseconds)"]
                        )
                    } else {
                        // A lost `0` or a forged `1`: the cooldown counts from the `1` (when the
                        // relay cycled, if it did), and repeats stay out of the history.
                        let repeated =
                            cycle != nil
                            && lastUnansweredRecorded.map { now.duration(since: $0) < Self.unansweredQuiet } == true
                        cycle?.finished(result, history: !repeated, cooldownFrom: cycleBegan)
                        if repeated {
                            unansweredSinceRecorded += 1
                            logger.warning(
                                "\(result.message); again within \(Self.unansweredQuiet) (\(unansweredSinceRecorded) since the one in the history): not added to the history",
                                metadata: ["source": "elsewhere"]
                            )
                        } else {
                            if cycle != nil {
                                lastUnansweredRecorded = now
                                unansweredSinceRecorded = 0
                            }
                            logger.warning("\(result.message)", metadata: ["source": "elsewhere"])
                        }
                    }
                    cycle = nil
                    cycleBegan = nil
                case .armTimer(let at):
                    timer?.cancel()
                    timer = Task {
                        try? await Task.sleep(for: at.duration(since: MonotonicClock.now()))
                        guard !Task.isCancelled else { return }
                        continuation.yield(.timer(at: at))
                    }
                case .ignoredInvalid(let why):
                    logger.warning("status topic: \(why)")
                case .echo(let report):
                    logger.debug("status topic: the late echo of a local opening", metadata: ["report": "\(report)"])
                }
            }
        }
        timer?.cancel()
        link?.stop()
        context.setLink(nil)
    }

    private func startLink(
        _ mqtt: MQTTConfig?,
        extras: LinkExtras,
        into continuation: AsyncStream<Input>.Continuation
    ) -> MQTTLink? {
        guard let mqtt else {
            context.setLink(nil)
            return nil
        }
        do {
            let link = try MQTTLink(
                config: mqtt,
                credentials: context.credentials,
                logger: context.logger,
                extras: extras,
                onEvent: context.linkEventHandler,
                onOpeningEnded: { echoes in continuation.yield(.openingEnded(echoes, at: MonotonicClock.now())) },
                onUnclaimed: { payload, retained in
                    // Retained status is whatever the relay did last time: stale by definition.
                    guard !retained else { return }
                    continuation.yield(.status(payload: payload, at: MonotonicClock.now()))
                }
            )
            if let failure = link.start() {
                context.logger.error(
                    "cannot start the MQTT link",
                    metadata: ["error": "\(SystemError("pthread_create", code: failure))"]
                )
                context.setLink(nil)
                return nil
            }
            context.setLink(link)
            return link
        } catch {
            context.logger.error(
                "cannot start the MQTT link",
                metadata: ["error": "\(SystemError("pipe", code: error.code))"]
            )
            context.setLink(nil)
            return nil
        }
    }

    /// Whether a link made for `old` serves `new` (`MQTTConfig.sameLink`: all but the timeout).
    static func sameLink(_ new: MQTTConfig?, _ old: MQTTConfig?) -> Bool {
        switch (new, old) {
        case (nil, nil): true
        case (let new?, let old?): new.sameLink(as: old)
        case (nil, _?), (_?, nil): false
        }
    }

    static func result(released: Bool, duration: Duration, budget: Duration) -> OpeningResult {
        if released {
            return OpeningResult(
                error: nil,
                adapter: .mqtt,
                duration: duration,
                attempts: [AttemptRecord(adapter: .mqtt, outcome: .success, reason: nil, duration: duration)],
                explanation: "relay cycle confirmed, caused elsewhere (seen on the status topic)"
            )
        }
        return OpeningResult(
            error: .operationTimeout,
            adapter: .mqtt,
            duration: duration,
            attempts: [
                AttemptRecord(adapter: .mqtt, outcome: .timeout, reason: .noRelease(budget: budget), duration: duration)
            ],
            explanation: "relay activated elsewhere but its release was never reported"
        )
    }
}
