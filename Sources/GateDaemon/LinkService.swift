import AsyncAlgorithms
import GateCore
import GateSystem
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

    /// The loop's own state: the link for which configuration, the cycle followed.
    private struct Loop {
        var mqtt: MQTTConfig?
        var extras: LinkExtras
        var link: MQTTLink?
        /// A link for a new configuration, waiting for the opening in flight to end.
        var replacement: (mqtt: MQTTConfig?, extras: LinkExtras)?
        // The lock taken for an `elsewhere` cycle is held until its `0` or the short bound,
        // never the whole MQTT budget (RelayObserver.activeBound says why).
        var observer = RelayObserver(releaseBudget: RelayObserver.activeBound)
        var cycle: OpeningRecorder?
        /// The observer's one timer: a timer input for another instant is stale.
        var timerAt: MonotonicInstant?
    }

    func run() async {
        // Subscribed before the configuration is read: no reload falls in between.
        let configs = context.configUpdates().map(Input.config)
        let idles = context.openingsIdle().map { Input.openingsIdle }
        let beats = context.progress.beats().map { Input.beat }
        // The link's callbacks (its own thread) and the timer.
        let (news, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let config = context.config
        var loop = Loop(mqtt: config.mqtt, extras: DaemonContext.linkExtras(for: config))
        loop.link = startLink(loop.mqtt, extras: loop.extras, into: continuation)
        await withDiscardingTaskGroup { timers in
            for await input in merge(configs, idles, merge(beats, news)).cancelOnGracefulShutdown() {
                let actions = await handle(input, loop: &loop, continuation)
                for action in actions {
                    carryOut(action, loop: &loop, timers: &timers, continuation)
                }
            }
            timers.cancelAll()
        }
        loop.link?.stop()
        context.setLink(nil)
    }

    /// One input; what the observer says of it.
    private func handle(
        _ input: Input,
        loop: inout Loop,
        _ continuation: AsyncStream<Input>.Continuation
    ) async -> [RelayObserver.Action] {
        switch input {
        case .beat:
            if TestFault.shouldWedge(Self.name, startNs: context.startNs) {
                context.logger.warning("TEST FAULT: the mqtt-link loop wedges (GATE_TEST_WEDGE)")
                try? await gracefulShutdown()
            }
            context.progress.report(Self.name)
            return []
        case .config(let config):
            let extras = DaemonContext.linkExtras(for: config)
            guard !Self.sameLink(config.mqtt, loop.mqtt) || extras != loop.extras else {
                loop.replacement = nil
                return []
            }
            loop.replacement = (config.mqtt, extras)
            replace(loop: &loop, continuation)
            return []
        case .openingsIdle:
            replace(loop: &loop, continuation)
            return []
        case .timer(let at):
            guard at == loop.timerAt else { return [] }
            loop.timerAt = nil
            return loop.observer.handle(.timerFired(at: at))
        case .openingEnded(let echoes, let at):
            return loop.observer.handle(.localOpeningEnded(owed: echoes, at: at))
        case .status(let payload, let at):
            guard let mqtt = loop.mqtt,
                let report = RelayObserver.report(for: MQTTStatusDecoder.event(for: payload, topic: mqtt.statusTopic))
            else { return [] }
            var local = false
            var recorder: OpeningRecorder?
            // Under protocol v2 a plain `1` proves nothing and never holds the lock
            // (docs/CONTRACT.md#protocol-v2-openings): a forged one cannot lock anyone out.
            if loop.observer.beginsCycle(report), context.config.esp32.protocolVersion == .v1 {
                // The lock says whether a local opening owns this cycle; holding it
                // also keeps local openings out while the relay is held elsewhere.
                switch context.pipeline.beginElsewhere(config: context.config) {
                case .success(let taken): recorder = taken
                case .failure: local = true
                }
            }
            let actions = loop.observer.handle(.report(report, at: at, local: local))
            // Kept only for a cycle the observer follows; an echo lets the lock go.
            if actions.contains(where: { if case .began = $0 { true } else { false } }) { loop.cycle = recorder }
            return actions
        }
    }

    /// Puts the waiting replacement of the link in place, unless an opening is in flight
    /// (then at `openingsIdle`).
    private func replace(loop: inout Loop, _ continuation: AsyncStream<Input>.Continuation) {
        guard let next = loop.replacement else { return }
        guard let old = context.takeLinkForReplacement() else {
            context.logger.info("MQTT link kept until the opening in flight ends; replaced then")
            return
        }
        old?.stop()
        loop.replacement = nil
        loop.mqtt = next.mqtt
        loop.extras = next.extras
        context.logger.info(
            loop.mqtt == nil ? "MQTT link closed: no [mqtt] table" : "MQTT link replaced for the new configuration"
        )
        loop.link = startLink(loop.mqtt, extras: loop.extras, into: continuation)
    }

    private func carryOut(
        _ action: RelayObserver.Action,
        loop: inout Loop,
        timers: inout DiscardingTaskGroup,
        _ continuation: AsyncStream<Input>.Continuation
    ) {
        let logger = context.logger
        switch action {
        case .began:
            logger.notice(
                "relay activated by someone else (seen on the status topic)",
                metadata: ["source": "elsewhere"]
            )
            loop.cycle?.stateChanged(.waitingForRelayClose, adapter: .mqtt)
        case .released(let duration):
            loop.timerAt = nil
            let result = Self.result(released: true, duration: duration, budget: loop.observer.releaseBudget)
            loop.cycle?.finished(result)
            loop.cycle = nil
            logger.notice(
                "\(result.message)",
                metadata: ["source": "elsewhere", "duration_ms": "\(duration.milliseconds)"]
            )
        case .unanswered(let duration, let began, let repeats):
            // A lost `0` or a forged `1`: the cooldown counts from the `1` (when the
            // relay cycled, if it did), and repeats stay out of the history.
            loop.timerAt = nil
            let result = Self.result(released: false, duration: duration, budget: loop.observer.releaseBudget)
            loop.cycle?.finished(result, history: repeats == 0, cooldownFrom: began)
            loop.cycle = nil
            if repeats == 0 {
                logger.warning("\(result.message)", metadata: ["source": "elsewhere"])
            } else {
                logger.warning(
                    "\(result.message); again within \(RelayObserver.unansweredQuiet) (\(repeats) since the one in the history): not added to the history",
                    metadata: ["source": "elsewhere"]
                )
            }
        case .armTimer(let at):
            loop.timerAt = at
            timers.addTimer(after: at.duration(since: MonotonicClock.now()), .timer(at: at), into: continuation)
        case .ignoredInvalid(let why):
            logger.warning("status topic: \(why)")
        case .echo(let report):
            logger.debug("status topic: the late echo of a local opening", metadata: ["report": "\(report)"])
        }
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
