import ServiceLifecycle

/// Tells systemd how the daemon is (docs/CONTRACT.md#gate-daemon, `Type=notify`): `READY=1` once the
/// services run, `WATCHDOG=1` every half of `$WATCHDOG_USEC` while the button's
/// and the link's own loops have made progress within that half (ServiceProgress:
/// a wedged loop stops the feeding and systemd restarts the daemon), and
/// `STOPPING=1` as soon as shutdown begins.
///
/// It is the last service of the group, so graceful shutdown (which goes in
/// reverse order) reaches it first: `STOPPING=1` leaves before the button's
/// opening in flight is waited for.
struct NotifierService: Service, CustomStringConvertible {
    var description: String { "systemd-notify" }
    let context: DaemonContext
    let watchdogInterval: Duration?

    func run() async {
        context.notify(["READY=1", "STATUS=\(context.statusText(for: context.config))"])
        context.logger.info(
            "daemon ready",
            metadata: ["status": "\(context.statusText(for: context.config))"]
        )
        if let interval = watchdogInterval {
            var starving = false
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
                } catch {
                    break
                }
                guard !Task.isShuttingDownGracefully, !Task.isCancelled else { break }
                let stale = context.progress.stale(limit: interval)
                if stale.isEmpty {
                    if starving {
                        context.logger.notice("watchdog fed again: every service loop made progress")
                        starving = false
                    }
                    context.notify(["WATCHDOG=1"])
                } else if !starving {
                    starving = true
                    context.logger.error(
                        "watchdog not fed: a service loop made no progress; systemd will restart the daemon",
                        metadata: [
                            "services":
                                "\(stale.map { "\($0.service) (\($0.silent.milliseconds) ms)" }.joined(separator: ", "))"
                        ]
                    )
                }
            }
        } else {
            try? await gracefulShutdown()
        }
        context.notify(["STOPPING=1", "STATUS=stopping"])
        context.logger.info("daemon stopping")
    }
}
