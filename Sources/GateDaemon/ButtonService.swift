import GPIO
import GateCore
import GateSystem
import Logging
import ServiceLifecycle
import Synchronization

/// Where the button's edges come from, and how to open it again after a failure.
struct ButtonSource: Sendable {
    /// For logs: "gpiochip0 line 17", or the test FIFO.
    let origin: String
    let open: @Sendable () throws -> EdgeReader
}

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
        case shutdown
        /// The watchdog's beat (ServiceProgress): this loop is alive.
        case beat
    }

    /// The loop's own state: the debouncer, the current reader, the restarts.
    private struct Loop {
        var button: ButtonConfig
        var debouncer: ButtonDebouncer
        var backoff = RestartBackoff()
        var timer: Task<Void, Never>?
        var reopening: Task<Void, Never>?
    }

    func run() async {
        let (inputs, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let current = ReaderSlot(reader)
        current.forward(into: continuation)
        let reloads = Task {
            for await config in context.buttonUpdates { continuation.yield(.config(config)) }
        }
        let beats = context.progress.beats { continuation.yield(.beat) }
        defer {
            reloads.cancel()
            beats?.cancel()
        }
        let button = context.config.button ?? ButtonConfig(line: 0)
        var loop = Loop(button: button, debouncer: Self.debouncer(for: button, startNs: context.startNs))
        _ = loop.backoff.handle(.started(at: MonotonicClock.now()))
        let openings = OpeningSlot()
        context.logger.info(
            "button armed",
            metadata: [
                "button": "\(source.origin)", "active_low": "\(button.activeLow)",
                "debounce_ms": "\(button.debounceMilliseconds)",
            ]
        )
        await withGracefulShutdownHandler {
            for await input in inputs {
                guard await handle(input, loop: &loop, current: current, openings: openings, continuation) else {
                    break
                }
            }
        } onGracefulShutdown: {
            current.stop()
            continuation.yield(.shutdown)
        }
        loop.timer?.cancel()
        loop.reopening?.cancel()
        current.stop()
        if openings.isBusy, let running = openings.current {
            context.logger.info("stopping: letting the opening in flight finish")
            await running.value
        }
    }

    /// One input; false when the loop ends (shutdown).
    private func handle(
        _ input: Input,
        loop: inout Loop,
        current: ReaderSlot,
        openings: OpeningSlot,
        _ continuation: AsyncStream<Input>.Continuation
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
        case .shutdown:
            return false
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
            guard let ending = current.ending, ending != .stopped, !Task.isShuttingDownGracefully else { return false }
            failed(Self.words(for: ending), loop: &loop, continuation)
            return true
        case .reopen:
            reopen(loop: &loop, current: current, continuation)
            return true
        }
        for action in actions {
            switch action {
            case .press(let at):
                press(at: at, openings: openings)
            case .armTimer(let at):
                loop.timer?.cancel()
                loop.timer = Task {
                    let wait = Int64(at) - Int64(MonotonicClock.now().nanoseconds)
                    if wait > 0 { try? await Task.sleep(for: .nanoseconds(wait)) }
                    guard !Task.isCancelled else { return }
                    continuation.yield(.timer(at: at))
                }
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
    private func failed(_ why: String, loop: inout Loop, _ continuation: AsyncStream<Input>.Continuation) {
        let now = MonotonicClock.now()
        guard case .restart(let at, let after, let failures) = loop.backoff.handle(.failed(at: now)) else { return }
        context.logger.error(
            "button events cannot be read; opening them again in \(after.humanReadable)",
            metadata: ["button": "\(source.origin)", "why": "\(why)", "failures": "\(failures)"]
        )
        context.report(PartReport(part: Self.name, failures: failures, lastFailure: why, restartIn: after))
        loop.reopening?.cancel()
        loop.reopening = Task {
            try? await Task.sleep(for: at.duration(since: MonotonicClock.now()))
            guard !Task.isCancelled else { return }
            continuation.yield(.reopen)
        }
    }

    private func reopen(loop: inout Loop, current: ReaderSlot, _ continuation: AsyncStream<Input>.Continuation) {
        let reader: EdgeReader
        do {
            reader = try source.open()
        } catch {
            failed("\(error)", loop: &loop, continuation)
            return
        }
        current.replace(with: reader, forwardingInto: continuation)
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

    private func press(at ns: UInt64, openings: OpeningSlot) {
        let logger = context.logger
        if openings.isBusy {
            logger.notice("button press ignored: an opening is in progress", metadata: ["source": "button"])
            return
        }
        let context = self.context
        // The slot is marked busy before this returns: the next edge already sees it.
        openings.start {
            await Self.open(pressedAt: ns, context: context)
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

/// The button's current reader, shared with the shutdown handler; each reader's edges
/// are forwarded into the service's inputs, then `.ended`.
final class ReaderSlot: Sendable {
    private let reader: Mutex<EdgeReader>
    private let forwarding = Mutex<Task<Void, Never>?>(nil)

    init(_ reader: EdgeReader) {
        self.reader = Mutex(reader)
    }

    var ending: EdgeReader.Ending? { reader.withLock { $0.ending } }

    func forward(into continuation: AsyncStream<ButtonService.Input>.Continuation) {
        let edges = reader.withLock { $0.edges }
        forwarding.withLock { task in
            task = Task {
                for await edge in edges { continuation.yield(.edge(edge)) }
                continuation.yield(.ended)
            }
        }
    }

    func replace(with next: EdgeReader, forwardingInto continuation: AsyncStream<ButtonService.Input>.Continuation) {
        reader.withLock { $0 = next }
        forward(into: continuation)
    }

    func stop() {
        reader.withLock { $0.stop() }
    }
}

/// The one opening the button may have running.
final class OpeningSlot: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let busy = Mutex(false)

    var isBusy: Bool { busy.withLock { $0 } }
    var current: Task<Void, Never>? { task.withLock { $0 } }

    func start(_ body: @escaping @Sendable () async -> Void) {
        busy.withLock { $0 = true }
        let running = Task { [self] in
            await body()
            busy.withLock { $0 = false }
        }
        task.withLock { $0 = running }
    }
}
