import ArgumentParser
import GateCore
import GateDaemon
import GateSystem
import Logging

struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the long-lived service: the push button, a warm MQTT link, the status file kept current.",
        discussion: """
            Reads the push button described by [button] (libgpiod), opens the gate once \
            per press with source "button" under the same lock and cooldown as `gate open`, \
            keeps a warm MQTT connection for button openings, records relay cycles caused \
            elsewhere (seen on the status topic) as source "elsewhere", and keeps \
            status.json current for widgets. With [notify] it shows desktop notifications \
            (freedesktop, on the session bus) for openings by others and failed openings.

            The configuration is reloaded on SIGHUP and when its file changes; a file that \
            does not validate leaves the running configuration in place. SIGTERM or SIGINT \
            lets an opening in flight finish, then exits 0. Under systemd (Type=notify) \
            it reports READY=1, RELOADING=1, STOPPING=1, STATUS= and WATCHDOG=1.

            Logs go to stderr, at info level unless -v or --log-level say otherwise; with \
            $JOURNAL_STREAM set they carry journald priorities.

            Exit codes: 0 stopped by SIGTERM/SIGINT; 64 bad command line; 69 the button's \
            GPIO line or the runtime folder cannot be used; 70 internal failure; \
            78 configuration missing or invalid at start.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Option(help: .hidden)
    var buttonEvents: String?

    func run() async throws {
        let level: Logger.Level = (globals.logLevel == nil && globals.verbose == 0) ? .info : globals.effectiveLogLevel
        LoggingSetup.bootstrap(level: level, program: "gate")
        let logger = Logger(label: "gate.daemon")
        let status = await Daemon.run(.init(configPath: globals.config, buttonEvents: buttonEvents), logger: logger)
        if status != ExitStatus.success {
            throw ExitCode(status)
        }
    }
}
