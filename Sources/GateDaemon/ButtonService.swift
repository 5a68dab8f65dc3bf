import AsyncAlgorithms
import GPIO
import GateCore
import GateSystem
import Logging
import ServiceLifecycle

/// The push button (docs/CONTRACT.md#gate-daemon, docs/CONTRACT.md#configuration): edges in, debounced,
/// one press = one opening with source `button`, under the same lock and
/// cooldown as `gate open`.
///
/// Edges keep being read and debounced while an opening runs, so a press then is
/// seen, logged and ignored rather than queued. On graceful shutdown the reader
/// stops and an opening in flight finishes within its budget before `run` returns.
///
/// A read that fails (a partial record on the FIFO, an error of the line) ends only
/// that reader: the source is opened again with `RestartBackoff`'s delays and the
/// failure reported (`STATUS=`, `gate doctor`). `run` returns only at shutdown, so
/// the other services and an opening in flight never notice.
struct ButtonService: Service, CustomStringConvertible {
    let context: DaemonContext
    /// The reader opened before `READY=1` (a line that cannot be opened stops the start).
    let reader: EdgeReader
    let source: ButtonSource

    static let name = "button"
    var description: String { Self.name }

    enum Input: Sendable {
        case edge(Edge)
        case timer(at: UInt64)
        case config(GateConfig)
        /// The current reader's stream finished.
        case ended
        /// Time to open the source again after a failure.
        case reopen
        /// The opening of a press ended.
        case openingEnded
        /// The watchdog's beat (ServiceProgress): this loop is alive.
        case beat
    }

    /// The loop's own state: the debouncer, the current reader, the restarts.
    private struct Loop {
        var button: ButtonConfig
        var debouncer: ButtonDebouncer
        var reader: EdgeReader
        /// Where the reader's edges, the timers and the openings' ends go.
        let inputs: AsyncStream<Input>.Continuation
        var backoff = RestartBackoff()
        /// An opening of a press is running: a press now is ignored, never queued.
        var busy = false
    }

    func run() async {
        // Subscribed before the configuration is read: no reload falls in between.
        let configs = context.configUpdates().map(Input.config)
        let beats = context.progress.beats().map { Input.beat }
        let (events, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let button = context.config.button ?? ButtonConfig(line: 0)
        var loop = Loop(
            button: button,
            debouncer: Self.debouncer(for: button, startNs: context.startNs),
            reader: reader,
            inputs: continuation
        )
        _ = loop.backoff.handle(.started(at: MonotonicClock.now()))
        context.logger.info(
            "button armed",
            metadata: [
                "button": "\(source.origin)", "active_low": "\(button.activeLow)",
                "debounce_ms": "\(button.debounceMilliseconds)",
            ]
        )
        // The openings of presses: waited for, never cancelled, when the loop ends.
        await withDiscardingTaskGroup { openings in
            // The reader's forwarding and the timers: ended with the loop.
            await withDiscardingTaskGroup { children in
                children.addTask(operation: Self.forward(reader, into: continuation))
                for await input in merge(configs, beats, events).cancelOnGracefulShutdown() {
                    guard await handle(input, loop: &loop, children: &children, openings: &openings) else { break }
                }
                loop.reader.stop()
                children.cancelAll()
            }
            if loop.busy { context.logger.info("stopping: letting the opening in flight finish") }
        }
    }

    /// A reader's edges into the loop's inputs, then `.ended`.
    private static func forward(
        _ reader: EdgeReader,
        into continuation: AsyncStream<Input>.Continuation
    ) -> @Sendable () async -> Void {
        {
            for await edge in reader.edges { continuation.yield(.edge(edge)) }
            continuation.yield(.ended)
        }
    }

    /// One input; false when the loop ends (its reader was stopped).
    private func handle(
        _ input: Input,
        loop: inout Loop,
        children: inout DiscardingTaskGroup,
        openings: inout DiscardingTaskGroup
    ) async -> Bool {
        let logger = context.logger
        let actions: [ButtonDebouncer.Action]
        switch input {
        case .beat:
            if TestFault.shouldWedge(Self.name, startNs: context.startNs) {
                logger.warning("TEST FAULT: the button loop wedges (GATE_TEST_WEDGE)")
                try? await gracefulShutdown()
            }
            context.progress.report(Self.name)
            return true
        case .edge(let edge):
            logger.trace("button edge", metadata: ["kind": "\(edge.kind)", "ts_ns": "\(edge.timestampNs)"])
            switch edge.kind {
            case .rising: actions = loop.debouncer.handle(.rising(at: edge.timestampNs))
            case .falling: actions = loop.debouncer.handle(.falling(at: edge.timestampNs))
            }
        case .timer(let at):
            actions = loop.debouncer.handle(.timerFired(at: at))
        case .config(let config):
            reload(config, loop: &loop)
            actions = []
        case .ended:
            guard let ending = loop.reader.ending, ending != .stopped, !Task.isShuttingDownGracefully else {
                return false
            }
            failed(Self.words(for: ending), loop: &loop, children: &children)
            return true
        case .reopen:
            reopen(loop: &loop, children: &children)
            return true
        case .openingEnded:
            loop.busy = false
            return true
        }
        for action in actions {
            switch action {
            case .press(let at):
                press(at: at, loop: &loop, openings: &openings)
            case .armTimer(let at):
                // A timer replaced by a later one fires needlessly: harmless (ButtonDebouncer).
                let wait = Int64(at) - Int64(MonotonicClock.now().nanoseconds)
                children.addTimer(after: .nanoseconds(max(0, wait)), .timer(at: at), into: loop.inputs)
            }
        }
        return true
    }

    private func reload(_ config: GateConfig, loop: inout Loop) {
        let next = config.button ?? loop.button
        if next.activeLow != loop.button.activeLow || next.debounceMilliseconds != loop.button.debounceMilliseconds {
            // The boot-settling window stays where it was: a reload is not a boot.
            loop.debouncer = Self.debouncer(for: next, startNs: context.startNs)
        }
        if next.chip != loop.button.chip || next.line != loop.button.line {
            context.logger.warning(
                "button.chip and button.line take effect when the daemon restarts",
                metadata: ["button": "\(source.origin)"]
            )
        }
        loop.button = next
    }

    /// The reader (or opening it again) failed: reported, and tried again after the backoff.
    private func failed(_ why: String, loop: inout Loop, children: inout DiscardingTaskGroup) {
        let now = MonotonicClock.now()
        guard case .restart(let at, let after, let failures) = loop.backoff.handle(.failed(at: now)) else { return }
        context.logger.error(
            "button events cannot be read; opening them again in \(after.humanReadable)",
            metadata: ["button": "\(source.origin)", "why": "\(why)", "failures": "\(failures)"]
        )
        context.report(PartReport(part: Self.name, failures: failures, lastFailure: why, restartIn: after))
        // The only timer of its kind: a new failure comes from the next reader, not before.
        children.addTimer(after: at.duration(since: MonotonicClock.now()), .reopen, into: loop.inputs)
    }

    private func reopen(loop: inout Loop, children: inout DiscardingTaskGroup) {
        let reader: EdgeReader
        do {
            reader = try source.open()
        } catch {
            failed("\(error)", loop: &loop, children: &children)
            return
        }
        loop.reader = reader
        children.addTask(operation: Self.forward(reader, into: loop.inputs))
        _ = loop.backoff.handle(.started(at: MonotonicClock.now()))
        let report = context.partReports.first { $0.part == Self.name }
        context.logger.notice(
            "button events are read again",
            metadata: ["button": "\(source.origin)", "failures": "\(loop.backoff.failures)"]
        )
        context.report(
            PartReport(
                part: Self.name,
                failures: loop.backoff.failures,
                lastFailure: report?.lastFailure ?? "",
                restartIn: nil
            )
        )
    }

    /// Why a reader's stream finished, as a sentence.
    static func words(for ending: EdgeReader.Ending) -> String {
        switch ending {
        case .stopped: "the reader was stopped"
        case .endOfInput: "the events' source was closed"
        case .failed(let error): "\(error)"
        }
    }

    private func press(at ns: UInt64, loop: inout Loop, openings: inout DiscardingTaskGroup) {
        if loop.busy {
            context.logger.notice("button press ignored: an opening is in progress", metadata: ["source": "button"])
            return
        }
        // Busy before the next input: the next edge already sees it.
        loop.busy = true
        let context = self.context
        let inputs = loop.inputs
        openings.addTask {
            await Self.open(pressedAt: ns, context: context)
            inputs.yield(.openingEnded)
        }
    }

    /// One opening for one press, through the one pipeline (lock, cooldown, status, history).
    private static func open(pressedAt ns: UInt64, context: DaemonContext) async {
        var logger = context.logger
        logger[metadataKey: "source"] = "button"
        var announced = false
        let result = await context.open(OpeningRequest(source: "button")) {
            _,
            _ in
            // Once the lock and the cooldown let the opening through.
            if !announced { logger.info("button pressed; opening", metadata: ["edge_ns": "\(ns)"]) }
            announced = true
        }
        let metadata: Logger.Metadata = [
            "outcome": "\(result.outcome.rawValue)", "adapter": "\(result.adapter?.rawValue ?? "none")",
            "duration_ms": "\(result.duration.milliseconds)",
        ]
        switch result.error {
        case nil:
            logger.info("\(result.message)", metadata: metadata)
        case .operationInProgress:
            logger.notice("button press ignored: \(result.message)", metadata: metadata)
        case .some:
            logger.error("\(result.message)", metadata: metadata)
        }
    }

    static func debouncer(for button: ButtonConfig, startNs: UInt64) -> ButtonDebouncer {
        ButtonDebouncer(
            .init(
                activeLow: button.activeLow,
                debounceMs: UInt32(clamping: button.debounceMilliseconds),
                startNs: startNs
            )
        )
    }
}
