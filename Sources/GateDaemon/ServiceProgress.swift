import GateCore
import GateSystem
import Synchronization

/// Whether the services' own loops are alive, for the systemd watchdog (issue 18):
/// `WATCHDOG=1` is sent only while every watched service has handled one of its
/// own inputs recently, so systemd restarts a daemon whose button or link loop
/// is wedged instead of hearing a timer that proves nothing.
///
/// Each watched service's loop gets a `beat` input every `beat` (half the
/// notifier's interval) among its real inputs and reports when it handles it;
/// a loop stuck in one input stops reporting. Without a watchdog (`beat` nil)
/// nothing beats.
final class ServiceProgress: Sendable {
    /// How often a watched loop is given a beat; nil when systemd wants no watchdog.
    let beat: Duration?
    private let stamps = Mutex<[String: MonotonicInstant]>([:])

    init(watchdogInterval: Duration?) {
        self.beat = watchdogInterval.map { $0 / 2 }
    }

    /// Watches `service` from now on (called before the services run).
    func watch(_ service: String) {
        stamps.withLock { $0[service] = MonotonicClock.now() }
    }

    /// `service`'s loop handled an input.
    func report(_ service: String) {
        stamps.withLock { if $0[service] != nil { $0[service] = MonotonicClock.now() } }
    }

    /// The watched services that reported nothing for `limit`, with how long.
    func stale(limit: Duration) -> [(service: String, silent: Duration)] {
        let now = MonotonicClock.now()
        return stamps.withLock { stamps in
            stamps.compactMap { name, last in
                let silent = now.duration(since: last)
                return silent > limit ? (name, silent) : nil
            }.sorted { $0.service < $1.service }
        }
    }

    /// A beat every `beat`, for a service to merge into its inputs; none without a watchdog.
    /// Each beat is made when its reader asks for it, in the reader's task.
    func beats() -> AsyncStream<Void> {
        guard let beat else { return AsyncStream { $0.finish() } }
        return AsyncStream {
            try? await Task.sleep(for: beat)
            return Task.isCancelled ? nil : ()
        }
    }
}
