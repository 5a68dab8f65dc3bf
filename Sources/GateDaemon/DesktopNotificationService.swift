import AsyncAlgorithms
import GateCore
import GateNotifications
import GateSystem
import ServiceLifecycle

/// Desktop notifications (docs/CONTRACT.md#desktop, `[notify]`): one per opening by others
/// (`elsewhere`, `button`, `homeassistant`), per failed opening, or per opening with
/// `every_opening`, replaced as the opening progresses (`NotificationMachine`).
///
/// It watches the status file rather than hooking the daemon's own openings: every
/// opener writes that file (the CLI and widgets opening directly, the button, Home
/// Assistant, the warm link's `elsewhere` cycles), so it is the one place that sees
/// all openings, and it is what the widgets show. It never takes part in an opening:
/// a slow or missing notification server delays only the next notice, never an
/// opening or the status file.
struct DesktopNotificationService: Service, CustomStringConvertible {
    var description: String { "notify" }
    let context: DaemonContext
    let notifications: DesktopNotifications

    enum Input: Sendable {
        case config(GateConfig)
        case statusChanged
    }

    func run() async throws {
        let logger = context.logger
        // Subscribed before the configuration is read: no reload falls in between.
        let configs = context.configUpdates().map(Input.config)
        var watch: FileChangeWatch?
        do {
            watch = try FileChangeWatch(directory: context.paths.runtimeDirectory, names: ["status.json"])
        } catch {
            // A failed part: the daemon starts the service again with backoff (SupervisedService).
            if context.config.notify != nil {
                throw DesktopNotificationFailure.failed(
                    "desktop notifications cannot watch the status file: \(error)"
                )
            }
        }
        defer { watch?.stop() }
        let changes = (watch?.changes ?? AsyncStream { $0.finish() }).map { Input.statusChanged }

        var settings = context.config.notify
        var machine = settings.map { start($0) }
        var lastFailure: DesktopNotificationFailure?
        for await input in merge(configs, changes).cancelOnGracefulShutdown() {
            switch input {
            case .config(let config):
                guard config.notify != settings else { continue }
                switch (settings, config.notify) {
                case (nil, let new?):
                    machine = start(new)
                    lastFailure = nil
                case (_?, nil):
                    machine = nil
                    logger.info("desktop notifications off: no [notify] table")
                case (_?, let new?):
                    _ = machine?.handle(.settings(new))
                case (nil, nil):
                    break
                }
                settings = config.notify
            case .statusChanged:
                guard var running = machine, case .success(let record) = StatusFile.effective(paths: context.paths)
                else { continue }
                for action in running.handle(.observed(record, at: MonotonicClock.now())) {
                    await carryOut(action, machine: &running, lastFailure: &lastFailure)
                }
                machine = running
            }
        }
    }

    /// Shows a notice and tells the machine what became of it, or logs one held back.
    private func carryOut(
        _ action: NotificationMachine.Action,
        machine: inout NotificationMachine,
        lastFailure: inout DesktopNotificationFailure?
    ) async {
        let logger = context.logger
        switch action {
        case .heldBack(let notice, let count):
            // Said once a burst: real openings never come this fast.
            let why = "(the status file is writable by group gate); the next one shown says how many"
            logger.log(
                level: count == 1 ? .warning : .debug,
                "desktop notifications held back: more than \(NotificationMachine.burst) new ones at once \(why)",
                metadata: ["summary": "\(notice.summary)", "held_back": "\(count)"]
            )
        case .show(let notice):
            // Without a session bus (said once at start) nothing is tried; the machine
            // still follows the file, so a bus that comes later shows only what is new.
            guard notifications.unavailability == nil else {
                _ = machine.handle(.notShown)
                return
            }
            switch await notifications.show(notice) {
            case .success(let id):
                _ = machine.handle(.shown(id: id))
                if lastFailure != nil { logger.notice("desktop notifications are shown again") }
                lastFailure = nil
                logger.debug(
                    "desktop notification shown",
                    metadata: [
                        "id": "\(id)", "replaces": "\(notice.replaces)", "summary": "\(notice.summary)",
                        "body": "\(notice.body)",
                    ]
                )
            case .failure(let failure):
                _ = machine.handle(.notShown)
                // Said once until it changes or works again; tried again at the next notice.
                if failure != lastFailure {
                    logger.warning("\(failure)", metadata: ["summary": "\(notice.summary)"])
                } else {
                    logger.debug("\(failure)", metadata: ["summary": "\(notice.summary)"])
                }
                lastFailure = failure
            }
        }
    }

    /// A machine that starts from the file as it is now; says once when no
    /// notification can be shown at all, and why (the daemon runs on without them).
    private func start(_ settings: NotifyConfig) -> NotificationMachine {
        let current = try? StatusFile.effective(paths: context.paths).get()
        if let unavailability = notifications.unavailability {
            context.logger.warning("desktop notifications ([notify]) cannot be shown: \(unavailability)")
        } else {
            context.logger.info(
                "desktop notifications on",
                metadata: [
                    "every_opening": "\(settings.everyOpening)", "timeout_ms": "\(settings.timeoutMilliseconds)",
                ]
            )
        }
        return NotificationMachine(settings: settings, current: current)
    }
}
