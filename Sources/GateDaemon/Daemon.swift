import GPIO
import GateCore
import GateNotifications
import GateSystem
import Logging
import Plumbing
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// `gate daemon` (docs/CONTRACT.md#gate-daemon): everything that must be in place before systemd hears
/// `READY=1` (a valid configuration, the runtime folder, the button's line), then
/// one `ServiceGroup` until SIGTERM or SIGINT.
public enum Daemon {
    public struct Options: Sendable {
        public var configPath: String?
        /// A FIFO of `struct gpioevent_data` records read instead of the GPIO chip: the
        /// way tests and demos press the button on a machine without GPIO.
        public var buttonEvents: String?

        public init(configPath: String?, buttonEvents: String?) {
            self.configPath = configPath
            self.buttonEvents = buttonEvents
        }
    }

    /// Runs until stopped; returns the process's exit status.
    public static func run(_ options: Options, logger: Logger) async -> Int32 {
        let startNs = MonotonicClock.now().nanoseconds
        // A SIGHUP (`systemctl reload`) that comes before the reload service traps it
        // must not kill the daemon, which is SIGHUP's default; the trap replaces this.
        signal(SIGHUP, SIG_IGN)
        let start: Start
        switch Start.make(options, logger: logger) {
        case .success(let made): start = made
        case .failure(let failure): return failure.status
        }
        let environment = ProcessEnvironment.current()
        var notifier: SystemdNotifier?
        switch SystemdNotifier.fromEnvironment(environment) {
        case .success(let found): notifier = found
        case .failure(let error):
            logger.warning("systemd notification disabled: NOTIFY_SOCKET is unusable", metadata: ["error": "\(error)"])
        }
        let watchdogInterval = SystemdNotifier.watchdogInterval(environment: environment, pid: getpid())
        let context = DaemonContext(
            config: start.config,
            configPath: start.configPath,
            paths: start.paths,
            credentials: AdapterFactory.credentials(environment: environment),
            notifier: notifier,
            startNs: startNs,
            buttonOrigin: start.button?.source.origin,
            logger: logger,
            watchdogInterval: watchdogInterval
        )
        logger.info(
            "daemon starting",
            metadata: [
                "config": "\(start.configPath)", "runtime": "\(start.paths.runtimeDirectory)", "pid": "\(getpid())",
            ]
        )
        let services = await services(
            context: context,
            button: start.button,
            environment: environment,
            watchdogInterval: watchdogInterval
        )
        var configuration = ServiceGroupConfiguration(
            // A service that stops is started again; it never ends the group.
            services: services.map { SupervisedService(service: $0, context: context) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        configuration.maximumGracefulShutdownDuration = GateConfig.longestOpeningLimit
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch {
            logger.critical("daemon stopped by a failure", metadata: ["error": "\(error)"])
            return ExitStatus.software
        }
        logger.info("daemon stopped")
        return ExitStatus.success
    }

    /// What the daemon needs before any service runs: the configuration, the runtime
    /// folder, the button's first reader.
    private struct Start {
        let config: GateConfig
        let configPath: String
        let paths: RuntimePaths
        let button: (reader: EdgeReader, source: ButtonSource)?

        /// Why the daemon cannot start: said in the log, and its exit status.
        struct Failure: Error {
            let status: Int32
        }

        static func make(_ options: Options, logger: Logger) -> Result<Start, Failure> {
            let config: GateConfig
            let configPath: String
            switch ConfigLocator(explicitPath: options.configPath).load() {
            case .success(let (loaded, candidate)):
                config = loaded
                configPath = candidate.path
            case .failure(let error):
                logger.critical("cannot start: \(error.description)")
                return .failure(Failure(status: ExitStatus.configuration))
            }
            let paths: RuntimePaths
            switch RuntimePaths.resolve().flatMap({ resolved in resolved.prepare().map { resolved } }) {
            case .success(let resolved): paths = resolved
            case .failure(let error):
                logger.critical("cannot start: \(error.message)")
                return .failure(Failure(status: ExitStatus.unavailable))
            }
            do {
                let button = try openButton(options: options, config: config, logger: logger)
                return .success(Start(config: config, configPath: configPath, paths: paths, button: button))
            } catch {
                logger.critical("cannot start: \(error)")
                return .failure(Failure(status: ExitStatus.unavailable))
            }
        }
    }

    /// The daemon's services, in the order they start (and the reverse of their stop).
    private static func services(
        context: DaemonContext,
        button: (reader: EdgeReader, source: ButtonSource)?,
        environment: [String: String],
        watchdogInterval: Duration?
    ) async -> [any Service & CustomStringConvertible] {
        var services: [any Service & CustomStringConvertible] = [StatusKeeperService(context: context)]
        // Trapped (and registered) before any service runs, so before READY=1: systemd may
        // send the first SIGHUP the moment it hears READY=1.
        let hangups = await HangupSignal.trap()
        services.append(ConfigService(context: context, hangups: hangups))
        services.append(LinkService(context: context))
        context.progress.watch(LinkService.name)
        services.append(HomeAssistantService(context: context))
        services.append(
            DesktopNotificationService(context: context, notifications: DesktopNotifications(environment: environment))
        )
        services.append(ControlService(context: context, firstListen: ControlService.listen(context: context)))
        if let button {
            services.append(ButtonService(context: context, reader: button.reader, source: button.source))
            context.progress.watch(ButtonService.name)
        }
        // Last: shut down first, so that STOPPING=1 leaves at once (see NotifierService).
        services.append(NotifierService(context: context, watchdogInterval: watchdogInterval))
        return services
    }

    /// The button's first reader, opened before `READY=1`, and how to open it again.
    private static func openButton(
        options: Options,
        config: GateConfig,
        logger: Logger
    ) throws -> (reader: EdgeReader, source: ButtonSource)? {
        let source: ButtonSource
        if let path = options.buttonEvents {
            source = ButtonSource(origin: "events FIFO \(path)") { try EdgeReader(owning: EventFIFO.open(path)) }
        } else if let button = config.button {
            // The line of the configuration at start: button.chip and button.line take effect at a restart.
            source = ButtonSource(origin: "\(button.chip) line \(button.line)") {
                let line = try ButtonLine.open(
                    chip: button.chip,
                    line: UInt32(clamping: button.line),
                    activeLow: button.activeLow
                )
                return try EdgeReader(line: line)
            }
        } else {
            logger.notice("no [button] table in the configuration: the daemon runs without a push button")
            return nil
        }
        return (try source.open(), source)
    }
}
