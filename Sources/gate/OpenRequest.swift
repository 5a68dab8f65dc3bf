import GateControl
import GateCore
import GateSystem
import Logging
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// One `gate open` as `OpenCommand` read it: the opening, handed to the daemon or run here,
/// its display and its exit status.
struct OpenRequest: Equatable {
    var via: AdapterSelection
    var json: Bool
    var source: String
    var force: Bool
    /// Open from this process even when a daemon answers on the control socket.
    var direct: Bool = false
    var config: String?
    var logLevel: Logger.Level

    /// How long the process waits at its end for its MQTT session's DISCONNECT.
    static let sessionEndGrace: UInt64 = 250_000_000

    /// Runs the opening; returns the exit status (docs/CONTRACT.md#exit-codes).
    func perform() async -> Int32 {
        // A reader that went away (`gate open | head -0`) must not kill an opening after
        // the trigger left: the status, the history and the cooldown still get written.
        signal(SIGPIPE, SIG_IGN)
        LoggingSetup.bootstrap(level: logLevel, program: "gate")
        let logger = Logger(label: "gate")
        let display = StateDisplay(mode: json ? .quiet : (Terminal.isTerminal(1) ? .live : .lines))

        let config: GateConfig
        let configPath: String
        switch ConfigLocator(explicitPath: self.config).load() {
        case .success(let (loaded, candidate)):
            config = loaded
            configPath = candidate.path
            logger.debug("configuration loaded", metadata: ["file": "\(candidate.path)"])
        case .failure(let error):
            return refuse(error.description, display, problems: error.problems.map(\.description), error.nextStep)
        }
        let paths: RuntimePaths
        switch RuntimePaths.resolve() {
        case .success(let resolved):
            paths = resolved
        case .failure(let error):
            // The message says what to do (join the group, set the variable).
            return refuse(error.message, display, problems: [], nil)
        }
        if !direct, let result = await handOver(config: config, configPath: configPath, paths: paths, display, logger) {
            report(result, display: display, config: config)
            return result.exitCode
        }
        let adapters = AdapterFactory(credentials: AdapterFactory.credentials())
        let result = await openHere(config: config, paths: paths, adapters: adapters, display: display, logger: logger)
        report(result, display: display, config: config)
        // The MQTT exchange sends its DISCONNECT on its own thread as the opening ends;
        // the process waits for it (a connected session ends within microseconds) rather
        // than close the socket without a word on exit.
        if !adapters.sessions.waitUntilNoneOpen(until: MonotonicNanoseconds.now() + Self.sessionEndGrace) {
            logger.debug(
                "exiting with the MQTT session still open",
                metadata: ["sessions": "\(adapters.sessions.count)"]
            )
        }
        return result.exitCode
    }

    /// The opening handed to a daemon serving this configuration; nil when there is none
    /// to hand it to, and this process opens by itself.
    private func handOver(
        config: GateConfig,
        configPath: String,
        paths: RuntimePaths,
        _ display: StateDisplay,
        _ logger: Logger
    ) async -> OpeningResult? {
        guard let canonicalConfig = ConfigLocator.canonical(configPath) else { return nil }
        let opening = ControlOpening(
            source: source,
            selection: via,
            force: force,
            configPath: canonicalConfig,
            sent: MonotonicClock.now()
        )
        switch await ControlClient.open(
            opening,
            config: config,
            paths: paths,
            logger: logger,
            onStateChange: display.show
        ) {
        case .finished(let result):
            return result
        case .openDirectly(let why):
            logger.debug("opening directly", metadata: ["why": "\(why)"])
            return nil
        }
    }

    /// The opening through this process's own pipeline.
    private func openHere(
        config: GateConfig,
        paths: RuntimePaths,
        adapters: AdapterFactory,
        display: StateDisplay,
        logger: Logger
    ) async -> OpeningResult {
        let pipeline = OpeningPipeline(paths: paths, adapters: adapters, logger: logger)
        return await pipeline.open(
            config: config,
            request: OpeningRequest(source: source, selection: via, force: force)
        ) { state, adapter in
            display.show(state, adapter: adapter)
        } onAttempt: { adapter in
            display.attempting(adapter)
        }
    }

    /// An opening that cannot begin (no usable configuration or runtime folder), reported
    /// as such; returns its exit status.
    private func refuse(
        _ explanation: String,
        _ display: StateDisplay,
        problems: [String],
        _ nextStep: String?
    ) -> Int32 {
        let result = OpeningResult(
            error: .configurationMissing,
            adapter: nil,
            duration: .zero,
            attempts: [],
            explanation: explanation
        )
        report(result, display: display, problems: problems, nextStep: nextStep)
        return result.exitCode
    }

    private func report(_ result: OpeningResult, display: StateDisplay, config: GateConfig) {
        report(result, display: display, problems: [], nextStep: OpeningAdvice.nextStep(for: result, config: config))
    }

    private func report(_ result: OpeningResult, display: StateDisplay, problems: [String], nextStep: String?) {
        display.finish()
        if json {
            Terminal.printLine(result.json.serialized())
            return
        }
        if result.error == nil {
            Terminal.printLine(result.message)
            return
        }
        Terminal.printError(display.failureText(result, problems: problems, nextStep: nextStep))
    }
}
