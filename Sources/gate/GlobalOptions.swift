import ArgumentParser
import GateSystem
import Logging

/// Options every subcommand takes, before or after its name
/// (`gate --config F open` and `gate open --config F`).
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("Configuration file to use instead of the usual search.", valueName: "path")
    )
    var config: String?

    @Flag(name: .shortAndLong, help: "More log output on stderr: -v decisions, -vv protocol detail, -vvv everything.")
    var verbose: Int

    @Option(
        name: .long,
        help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error, critical.", valueName: "level")
    )
    var logLevel: LogLevelArgument?

    /// The level from `--log-level`, else from the number of `-v`, else warnings only.
    var effectiveLogLevel: Logger.Level {
        if let logLevel { return logLevel.level }
        switch verbose {
        case 0: return .warning
        case 1: return .info
        case 2: return .debug
        default: return .trace
        }
    }

    /// Sets up swift-log once for the process and returns the command's logger.
    func makeLogger(label: String = "gate") -> Logger {
        LoggingSetup.bootstrap(level: effectiveLogLevel, program: "gate")
        return Logger(label: label)
    }
}
