import ArgumentParser
import GateCore
import GateSystem
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Trigger the relay once and wait for its complete cycle.",
        discussion: """
            UDP is tried first when it is configured and the ESP32 is on a directly \
            connected network; MQTT is the fallback, used only when there is no evidence \
            that the UDP trigger reached the ESP32. The relay is never triggered twice.

            On a terminal the state is shown live on one line; otherwise one line is \
            printed per state change. With --json exactly one JSON object is printed.

            Only one opening runs at a time, whoever asks (shell, widget, daemon); for \
            runtime.cooldown seconds after a cycle a new one is refused, so that a double \
            press cannot reverse a toggle gate.

            Exit codes: 0 relay cycle confirmed; 64 bad command line; 69 no adapter \
            reached the ESP32 (or the adapter forced with --via failed); 75 another \
            opening is in progress, or the cooldown is running; 76 the ESP32 answered outside the protocol; \
            78 configuration missing or invalid; 124 relay activated but never released.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Option(help: ArgumentHelp("Which adapter to use: auto (UDP, then MQTT), udp or mqtt.", valueName: "adapter"))
    var via: AdapterSelection = .auto

    @Flag(help: "Print exactly one JSON object with the outcome on stdout, whatever happens.")
    var json = false

    @Option(help: ArgumentHelp("Who asked, for logs and history (letters, digits, - and _).", valueName: "name"))
    var source = "cli"

    @Flag(help: "Skip the cooldown after the last relay cycle. The lock is never skipped.")
    var force = false

    func validate() throws {
        let allowed = source.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d || byte == 0x5f
        }
        guard !source.isEmpty, source.utf8.count <= 32, allowed else {
            throw ValidationError("--source must be 1 to 32 letters, digits, '-' or '_'")
        }
    }

    func run() async throws {
        // A reader that went away (`gate open | head -0`) must not kill an opening after
        // the trigger left: the status, the history and the cooldown still get written.
        signal(SIGPIPE, SIG_IGN)
        var logger = globals.makeLogger()
        logger[metadataKey: "source"] = "\(source)"
        let display = StateDisplay(mode: json ? .quiet : (Terminal.isTerminal(1) ? .live : .lines))

        let config: GateConfig
        switch ConfigLocator(explicitPath: globals.config).load() {
        case .success(let (loaded, candidate)):
            config = loaded
            logger.debug("configuration loaded", metadata: ["file": "\(candidate.path)"])
        case .failure(let error):
            let result = OpeningResult(error: .configurationMissing, adapter: nil, duration: .zero, attempts: [], message: error.description)
            report(result, display: display, problems: error.problems.map(\.description))
            throw ExitCode(result.exitCode)
        }

        let recorder: OpeningRecorder
        let began = RuntimePaths.resolve().mapError { OpeningRecorder.Refusal.unavailable($0.message) }
            .flatMap { OpeningRecorder.begin(paths: $0, source: source, runtime: config.runtime, force: force, logger: logger) }
        switch began {
        case .success(let taken):
            recorder = taken
        case .failure(let refusal):
            let error: GateKeeperError
            switch refusal {
            case .inProgress, .cooldown: error = .operationInProgress
            case .unavailable: error = .configurationMissing
            }
            let result = OpeningResult(error: error, adapter: nil, duration: .zero, attempts: [], message: refusal.message)
            report(result, display: display, problems: [])
            throw ExitCode(result.exitCode)
        }

        let adapters = StandardAdapters.factory(credentials: StandardAdapters.credentials(), logger: logger)
        let opener = Opener(config: config, selection: via, logger: logger, makeAdapter: adapters)
        let outcome = await opener.open { state, adapter in
            display.show(state, adapter: adapter)
            recorder.stateChanged(state, adapter: adapter)
        }
        recorder.finished(outcome.result)
        report(outcome.result, display: display, problems: [])
        if outcome.result.exitCode != ExitStatus.success {
            throw ExitCode(outcome.result.exitCode)
        }
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

extension AdapterSelection: ExpressibleByArgument {
    // Spelled out: ArgumentParser's default derives these by reflection, which
    // showed up in every start's profile.
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
    public var defaultValueDescription: String { rawValue }
}
