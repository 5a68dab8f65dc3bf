import GateCore
import GateSystem
import ServiceLifecycle

/// Runs a service, and runs it again when it stops before the daemon does
/// (docs/CONTRACT.md#gate-daemon): a ServiceGroup takes a service that returns or throws
/// for the end of the daemon and cancels every other one, the opening in flight
/// included. Here the failure is logged, reported (`STATUS=`, `gate doctor`) and the
/// service started again after `RestartBackoff`'s delay; the others never notice.
struct SupervisedService: Service, CustomStringConvertible {
    let service: any Service & CustomStringConvertible
    let context: DaemonContext

    var description: String { service.description }

    /// Whether the service's run is a restart: what happened while it was down went
    /// unseen by it (the config-reload service then reads the file once).
    @TaskLocal static var isRestart = false

    func run() async {
        var backoff = RestartBackoff()
        var firstRun = true
        while true {
            _ = backoff.handle(.started(at: MonotonicClock.now()))
            let why = await runOnce(first: firstRun)
            firstRun = false
            guard !Task.isShuttingDownGracefully, !Task.isCancelled,
                case .restart(let at, let after, let failures) = backoff.handle(.failed(at: MonotonicClock.now()))
            else { return }
            context.logger.error(
                "the \(description) service stopped: \(why); starting it again in \(after.humanReadable)",
                metadata: ["service": "\(description)", "failures": "\(failures)"]
            )
            context.report(PartReport(part: description, failures: failures, lastFailure: why, restartIn: after))
            do {
                try await cancelWhenGracefulShutdown {
                    try await Task.sleep(for: at.duration(since: MonotonicClock.now()))
                }
            } catch {
                return
            }
            guard !Task.isShuttingDownGracefully, !Task.isCancelled else { return }
            context.logger.notice("the \(description) service runs again", metadata: ["service": "\(description)"])
            context.report(PartReport(part: description, failures: failures, lastFailure: why, restartIn: nil))
        }
    }

    /// One run of the service; why it ended, as words.
    private func runOnce(first: Bool) async -> String {
        do {
            if first, TestFault.stops(description) {
                return try await runUntilTestStop()
            }
            try await Self.$isRestart.withValue(!first) { try await service.run() }
            return "it returned by itself"
        } catch {
            return "\(error)"
        }
    }

    /// TEST ONLY (`GATE_TEST_STOP`): the service's first run is cancelled half a second in,
    /// as a service that fails would end.
    private func runUntilTestStop() async throws -> String {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            group.addTask { try await Task.sleep(for: .milliseconds(500)) }
            _ = try await group.next()
            group.cancelAll()
            return "it was stopped (GATE_TEST_STOP)"
        }
    }
}
