import GateCore
import GateSystem
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// One `gate open`, however its command line was read: by ArgumentParser
/// (`OpenCommand`), or by the fast path for the common forms (`OpenRequest+FastPath`).
struct OpenRequest: Equatable {
    var via: AdapterSelection
    var json: Bool
    var source: String
    var force: Bool
    var config: String?
    var logLevel: Logger.Level

    static func isValidSource(_ source: String) -> Bool {
        let allowed = source.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d || byte == 0x5f
        }
        return !source.isEmpty && source.utf8.count <= 32 && allowed
    }

    /// Runs the opening; returns the exit status of SPEC §2.
    func perform() async -> Int32 {
        switch start(early: via == .mqtt ? EarlyMQTTExchange.begin() : nil) {
        case .finished(let status):
            return status
        case .ready(let opening):
            return await finish(opening)
        }
    }

    /// How far `start` took the opening.
    enum Start {
        /// Over before any adapter ran (configuration, lock, cooldown): the exit status.
        case finished(Int32)
        /// The lock is held and the status says `triggering`: the adapters may run.
        case ready(Opening)
    }

    /// What `start` hands to `finish`.
    struct Opening {
        let config: GateConfig
        let recorder: OpeningRecorder
        let logger: Logger
        let display: StateDisplay
        let credentials: CredentialLookup
        let early: EarlyMQTTExchange?
    }

    /// The synchronous part of an opening, up to the adapters: configuration, lock,
    /// status. Synchronous so that `GateProgram` can run it on the main thread before
    /// the concurrency runtime starts its threads.
    ///
    /// - Parameter early: the MQTT exchange begun when the command line named MQTT
    ///   (see `EarlyMQTTExchange`): handed its broker here when MQTT goes first,
    ///   abandoned otherwise. When MQTT goes first without one, it is begun here.
    func start(early: EarlyMQTTExchange?) -> Start {
        // A reader that went away (`gate open | head -0`) must not kill an opening after
        // the trigger left: the status, the history and the cooldown still get written.
        signal(SIGPIPE, SIG_IGN)
        LoggingSetup.bootstrap(level: logLevel, program: "gate")
        var logger = Logger(label: "gate")
        logger[metadataKey: "source"] = "\(source)"
        let display = StateDisplay(mode: json ? .quiet : (Terminal.isTerminal(1) ? .live : .lines))

        let config: GateConfig
        switch ConfigLocator(explicitPath: self.config).load() {
        case .success(let (loaded, candidate)):
            config = loaded
            logger.debug("configuration loaded", metadata: ["file": "\(candidate.path)"])
        case .failure(let error):
            early?.abandon()
            let result = OpeningResult(error: .configurationMissing, adapter: nil, duration: .zero, attempts: [], message: error.description)
            report(result, display: display, problems: error.problems.map(\.description))
            return .finished(result.exitCode)
        }

        let credentials = StandardAdapters.credentials()
        // Connecting is not triggering: only the opening machine, once it runs, lets
        // the trigger go. An opening refused below abandons the connection unused.
        var early = early
        if via == .mqtt || (via == .auto && config.udp == nil), let mqtt = config.mqtt {
            if early == nil {
                early = EarlyMQTTExchange.begin()
            }
            early?.connect(config: mqtt, credentials: credentials, logger: logger)
        } else {
            early?.abandon()
            early = nil
        }

        let began = RuntimePaths.resolve().mapError { OpeningRecorder.Refusal.unavailable($0.message) }
            .flatMap { OpeningRecorder.begin(paths: $0, source: source, runtime: config.runtime, force: force, logger: logger) }
        switch began {
        case .success(let recorder):
            return .ready(Opening(config: config, recorder: recorder, logger: logger, display: display, credentials: credentials, early: early))
        case .failure(let refusal):
            early?.abandon()
            let error: GateKeeperError
            switch refusal {
            case .inProgress, .cooldown: error = .operationInProgress
            case .unavailable: error = .configurationMissing
            }
            let result = OpeningResult(error: error, adapter: nil, duration: .zero, attempts: [], message: refusal.message)
            report(result, display: display, problems: [])
            return .finished(result.exitCode)
        }
    }

    /// The adapters, then the result: status, history, the report.
    func finish(_ opening: Opening) async -> Int32 {
        let adapters = StandardAdapters.factory(credentials: opening.credentials, logger: opening.logger, early: opening.early)
        let opener = Opener(config: opening.config, selection: via, logger: opening.logger, makeAdapter: adapters)
        let outcome = await opener.open { state, adapter in
            opening.display.show(state, adapter: adapter)
            opening.recorder.stateChanged(state, adapter: adapter)
        }
        // An early exchange the plan never used (a UDP opening): nothing was sent on it.
        opening.early?.abandon()
        opening.recorder.finished(outcome.result)
        report(outcome.result, display: opening.display, problems: [])
        return outcome.result.exitCode
    }

    private func report(_ result: OpeningResult, display: StateDisplay, problems: [String]) {
        display.finish()
        if json {
            Terminal.printLine(result.json.serialized())
            return
        }
        if result.error == nil {
            Terminal.printLine(result.message)
            return
        }
        Terminal.printError(display.failureText(result, problems: problems))
    }
}
