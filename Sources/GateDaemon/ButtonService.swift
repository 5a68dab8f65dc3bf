import GPIO
import GateCore
import GateSystem
import Logging
import ServiceLifecycle
import Synchronization

/// The push button (docs/CONTRACT.md#gate-daemon, docs/CONTRACT.md#configuration): edges in, debounced,
/// one press = one opening with source `button`, under the same lock and
/// cooldown as `gate open`.
///
/// Edges keep being read and debounced while an opening runs, so a press then is
/// seen, logged and ignored rather than queued. On graceful shutdown the reader
/// stops and an opening in flight finishes within its budget before `run` returns.
struct ButtonService: Service, CustomStringConvertible {
    let context: DaemonContext
    let reader: EdgeReader
    /// What the edges come from, for logs ("gpiochip0 line 17", or the test FIFO).
    let origin: String

    static let name = "button"
    var description: String { Self.name }

    enum Input: Sendable {
        case edge(Edge)
        case timer(at: UInt64)
        case config(GateConfig)
        case ended
        /// The watchdog's beat (ServiceProgress): this loop is alive.
        case beat
    }

    func run() async {
        let logger = context.logger
        let (inputs, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let edges = Task {
            for await edge in reader.edges { continuation.yield(.edge(edge)) }
            continuation.yield(.ended)
        }
        let reloads = Task {
            for await config in context.buttonUpdates { continuation.yield(.config(config)) }
        }
        let beats = context.progress.beats { continuation.yield(.beat) }
        defer {
            edges.cancel()
            reloads.cancel()
            beats?.cancel()
        }

        var button = context.config.button ?? ButtonConfig(line: 0)
        var debouncer = Self.debouncer(for: button, startNs: context.startNs)
        var timer: Task<Void, Never>?
        let openings = OpeningSlot()
        logger.info(
            "button armed",
            metadata: [
                "button": "\(origin)", "active_low": "\(button.activeLow)",
                "debounce_ms": "\(button.debounceMilliseconds)",
            ]
        )

        await withGracefulShutdownHandler {
            loop: for await input in inputs {
                let actions: [ButtonDebouncer.Action]
                switch input {
                case .beat:
                    if TestFault.shouldWedge(Self.name, startNs: context.startNs) {
                        logger.warning("TEST FAULT: the button loop wedges (GATE_TEST_WEDGE)")
                        try? await gracefulShutdown()
                    }
                    context.progress.report(Self.name)
                    continue
                case .edge(let edge):
                    logger.trace("button edge", metadata: ["kind": "\(edge.kind)", "ts_ns": "\(edge.timestampNs)"])
                    switch edge.kind {
                    case .rising: actions = debouncer.handle(.rising(at: edge.timestampNs))
                    case .falling: actions = debouncer.handle(.falling(at: edge.timestampNs))
                    }
                case .timer(let at):
                    actions = debouncer.handle(.timerFired(at: at))
                case .config(let config):
                    let next = config.button ?? button
                    if next.activeLow != button.activeLow || next.debounceMilliseconds != button.debounceMilliseconds {
                        // The boot-settling window stays where it was: a reload is not a boot.
                        debouncer = Self.debouncer(for: next, startNs: context.startNs)
                    }
                    if next.chip != button.chip || next.line != button.line {
                        logger.warning(
                            "button.chip and button.line take effect when the daemon restarts",
                            metadata: ["button": "\(origin)"]
                        )
                    }
                    button = next
                    actions = []
                case .ended:
                    if let ending = reader.ending, ending != .stopped {
                        logger.error(
                            "button events ended; no more presses will be read",
                            metadata: ["button": "\(origin)", "why": "\(ending)"]
                        )
                    }
                    break loop
                }
                for action in actions {
                    switch action {
                    case .press(let at):
                        press(at: at, openings: openings)
                    case .armTimer(let at):
                        timer?.cancel()
                        timer = Task {
                            let wait = Int64(at) - Int64(MonotonicClock.now().nanoseconds)
                            if wait > 0 { try? await Task.sleep(for: .nanoseconds(wait)) }
                            guard !Task.isCancelled else { return }
                            continuation.yield(.timer(at: at))
                        }
                    }
                }
            }
        } onGracefulShutdown: {
            reader.stop()
        }
        timer?.cancel()
        reader.stop()
        if openings.isBusy, let running = openings.current {
            logger.info("stopping: letting the opening in flight finish")
            await running.value
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
