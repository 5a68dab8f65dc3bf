import ArgumentParser

/// What the relay says, independent of the wire: UDP sends 0x01 / 0x00 / 0x7f,
/// MQTT will publish `1` / `0` / something that is neither.
enum Report: Sendable, Equatable {
    case activated
    case released
    case garbage
}

/// The two moments at which the real device reports: relay closed, relay released.
enum RelayEdge: Sendable {
    case closed
    case released
}

/// How the simulated device misbehaves. A fault changes only what is REPORTED (and, for
/// `slow-release`, when): the relay itself always cycles and every activation is recorded,
/// so a test can tell "the device was triggered but lied" from "the trigger never arrived".
///
/// New modes (`udp-off`, `mqtt-off` come with the MQTT transport) are new cases here;
/// `--fault` parsing, the usage error and `--help` pick them up from `allCases`.
enum FaultMode: String, CaseIterable, Sendable, ExpressibleByArgument {
    case none
    case silent
    case noRelease = "no-release"
    case garbage
    case slowRelease = "slow-release"
    case duplicate

    /// The hold `slow-release` uses instead of `--hold-ms`: longer than the gate's UDP
    /// budget (2 s) so that the gate sees `1` without `0` and must time out.
    static let slowReleaseHold: Duration = .milliseconds(3000)

    /// The reports to send, in order, when the relay reaches `edge`.
    func reports(at edge: RelayEdge) -> [Report] {
        let normal: Report = edge == .closed ? .activated : .released
        switch self {
        case .none, .slowRelease:
            return [normal]
        case .silent:
            return []
        case .noRelease:
            return edge == .closed ? [.activated] : []
        case .garbage:
            // One invalid answer in place of the whole cycle, like a device with the wrong firmware.
            return edge == .closed ? [.garbage] : []
        case .duplicate:
            return [normal, normal]
        }
    }

    /// How long the relay stays closed under this fault.
    func hold(configured: Duration) -> Duration {
        self == .slowRelease ? Self.slowReleaseHold : configured
    }

    /// One line for `--help`.
    var summary: String {
        switch self {
        case .none: "answers 0x01, holds the relay for --hold-ms, answers 0x00 (a healthy device)"
        case .silent: "activates the relay but never answers"
        case .noRelease: "answers 0x01 but never 0x00 (the relay still releases after --hold-ms)"
        case .garbage: "answers one 0x7f datagram instead of 0x01 and 0x00"
        case .slowRelease: "answers 0x01, holds the relay 3000 ms (not --hold-ms), then answers 0x00"
        case .duplicate: "sends every answer twice: 0x01, 0x01, 0x00, 0x00 as four datagrams"
        }
    }

    /// Makes `--help` list every mode with its summary under `--fault`.
    static var allValueDescriptions: [String: String] {
        Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0.summary) })
    }
}
