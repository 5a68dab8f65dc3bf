import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
#endif

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
