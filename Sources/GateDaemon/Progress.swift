import GateCore
import GateSystem
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

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

/// TEST ONLY, hidden: `GATE_TEST_WEDGE=<service>@<seconds>` makes that service's loop
/// (`button` or `mqtt-link`) stop taking inputs that many seconds after the daemon
/// started, as a wedged loop would, so that a black-box test can check that the
/// watchdog stops being fed (LongRunTests). Not documented for users; unset, it
/// costs one environment lookup at start.
enum TestFault {
    static let wedge: (service: String, after: Duration)? = {
        guard let raw = getenv("GATE_TEST_WEDGE") else { return nil }
        let parts = String(cString: raw).split(separator: "@")
        guard parts.count == 2, let seconds = Double(parts[1]) else { return nil }
        return (String(parts[0]), .milliseconds(Int64(seconds * 1000)))
    }()

    /// Whether `service`'s loop should wedge now.
    static func shouldWedge(_ service: String, startNs: UInt64) -> Bool {
        guard let wedge, wedge.service == service else { return false }
        return MonotonicClock.now().duration(since: MonotonicInstant(nanoseconds: startNs)) >= wedge.after
    }
}

extension TestFault {
    /// TEST ONLY, hidden: `GATE_TEST_STOP=<service>` cancels that service's first run half a
    /// second in, as a failing service would end, so that a black-box test can check that
    /// the daemon starts it again and the others never notice (DaemonPartsTests).
    static let stop: String? = getenv("GATE_TEST_STOP").map { String(cString: $0) }

    static func stops(_ service: String) -> Bool { stop == service }
}
