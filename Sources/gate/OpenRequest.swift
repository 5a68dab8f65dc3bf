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

    /// Runs the opening; returns the exit status (docs/CONTRACT.md#exit-codes).
    func perform() async -> Int32 {
        // A reader that went away (`gate open | head -0`) must not kill an opening after
        // the trigger left: the status, the history and the cooldown still get written.
        signal(SIGPIPE, SIG_IGN)
        LoggingSetup.bootstrap(level: logLevel, program: "gate")
        let logger = Logger(label: "gate")
        let display = StateDisplay(mode: json ? .quiet : (Terminal.isTerminal(1) ? .live : .lines))

        let config: GateConfig
        switch ConfigLocator(explicitPath: self.config).load() {
        case .success(let (loaded, candidate)):
            config = loaded
            logger.debug("configuration loaded", metadata: ["file": "\(candidate.path)"])
        case .failure(let error):
            let result = OpeningResult(error: .configurationMissing, adapter: nil, duration: .zero, attempts: [], explanation: error.description)
            report(result, display: display, problems: error.problems.map(\.description))
            return result.exitCode
        }
        let paths: RuntimePaths
        switch RuntimePaths.resolve() {
        case .success(let resolved):
            paths = resolved
        case .failure(let error):
            let result = OpeningResult(error: .configurationMissing, adapter: nil, duration: .zero, attempts: [], explanation: error.message)
            report(result, display: display, problems: [])
            return result.exitCode
        }
        let pipeline = OpeningPipeline(paths: paths, adapters: AdapterFactory(credentials: AdapterFactory.credentials()), logger: logger)
        let result = await pipeline.open(config: config, request: OpeningRequest(source: source, selection: via, force: force)) { state, adapter in
            display.show(state, adapter: adapter)
        }
        report(result, display: display, problems: [])
        return result.exitCode
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
