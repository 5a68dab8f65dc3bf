import ArgumentParser
import Logging

/// How the simulated device misbehaves. A fault changes only what is REPORTED (and, for
/// `slow-release`, when): the relay itself always cycles and every activation is recorded,
/// so a test can tell "the device was triggered but lied" from "the trigger never arrived".
/// Two modes belong to protocol 2 only: `lost-replies` (the network loses the device's
/// replies) and `busy` (another opening holds the relay, so it does not move at all).
///
/// `--fault` parsing, the usage error and `--help` pick the modes up from `allCases`.
enum FaultMode: String, CaseIterable, Sendable {
    case none
    case silent
    case noRelease = "no-release"
    case garbage
    case slowRelease = "slow-release"
    case duplicate
    case udpOff = "udp-off"
    case mqttOff = "mqtt-off"
    case lostReplies = "lost-replies"
    case busy

    /// The hold `slow-release` uses instead of `--hold-ms`: longer than the gate's UDP
    /// budget (2 s) so that the gate sees `1` without `0` and must time out.
    static let slowReleaseHold: Duration = .milliseconds(3000)

    /// Whether the mode exists only under `--protocol 2` (v1 has no signed busy answer, and
    /// its replies carry nothing that would make losing some of them interesting).
    var needsProtocol2: Bool {
        switch self {
        case .lostReplies, .busy: true
        case .none, .silent, .noRelease, .garbage, .slowRelease, .duplicate, .udpOff, .mqttOff: false
        }
    }

    /// The transport an `-off` mode removes; nil for the modes that change what is reported.
    var switchesOff: Transport? {
        switch self {
        case .udpOff: .udp
        case .mqttOff: .mqtt
        default: nil
        }
    }

    /// How long the relay stays closed when triggered on a transport with this fault.
    func hold(configured: Duration) -> Duration {
        self == .slowRelease ? Self.slowReleaseHold : configured
    }

    /// One line for `--help`.
    var summary: String {
        switch self {
        case .none:
            "reports on (UDP 0x01, MQTT 1), holds the relay for --hold-ms, reports off (0x00, 0): a healthy device"
        case .silent: "activates the relay but never reports"
        case .noRelease: "reports on but never off (the relay still releases after --hold-ms)"
        case .garbage: "reports one invalid answer (UDP 0x7f, MQTT x) instead of on and off"
        case .slowRelease:
            "reports on, holds the relay 3000 ms (not --hold-ms) when triggered on that transport, then off"
        case .duplicate: "sends every report twice (UDP: 0x01, 0x01, 0x00, 0x00 as four datagrams)"
        case .udpOff: "no UDP socket at all: nothing listens, a client gets ICMP port unreachable"
        case .mqttOff: "no MQTT connection, even with --mqtt-host"
        case .lostReplies:
            "protocol 2: loses the device's replies on that transport (all, or --loss-fraction of them); "
                + "the device works and the other transport still answers"
        case .busy:
            "protocol 2: every open arriving on that transport finds the relay held by another opening: "
                + "answered 0x93, the relay does not move"
        }
    }
}

/// One `--fault` value: a mode, for one transport (`udp:silent`) or for both (`silent`).
struct FaultSetting: Sendable, ExpressibleByArgument, CustomStringConvertible {
    var transport: Transport?
    var mode: FaultMode

    init?(argument: String) {
        var text = Substring(argument)
        if let colon = text.firstIndex(of: ":") {
            guard let transport = Transport(rawValue: String(text[..<colon])) else { return nil }
            self.transport = transport
            text = text[text.index(after: colon)...]
        }
        guard let mode = FaultMode(rawValue: String(text)) else { return nil }
        self.mode = mode
    }

    /// Unprefixed: the `-off` modes name their own transport, the others apply to both.
    var targets: [Transport] {
        if let transport { return [transport] }
        if let off = mode.switchesOff { return [off] }
        return Transport.allCases
    }

    var description: String { (transport.map { "\($0.rawValue):" } ?? "") + mode.rawValue }

    // The usage error for an unknown mode and `--help` list these.
    static var allValueStrings: [String] { FaultMode.allCases.map(\.rawValue) }

    static var allValueDescriptions: [String: String] {
        Dictionary(uniqueKeysWithValues: FaultMode.allCases.map { ($0.rawValue, $0.summary) })
    }
}

/// The fault of each transport once every `--fault` has been applied.
struct Faults: Sendable {
    private var modes: [Transport: FaultMode] = [:]

    /// Refuses a transport given two faults (the user meant one of them and the other
    /// would silently lose) and an `-off` mode given to the transport it does not name.
    init(_ settings: [FaultSetting]) throws(ValidationError) {
        for setting in settings {
            if let off = setting.mode.switchesOff, let transport = setting.transport, transport != off {
                throw ValidationError(
                    "--fault \(setting.description): \(setting.mode.rawValue) switches off \(off.rawValue), not \(transport.rawValue)"
                )
            }
            for transport in setting.targets {
                if let earlier = modes[transport] {
                    throw ValidationError(
                        "--fault \(setting.description): \(transport.rawValue) already has the fault \(earlier.rawValue); "
                            + "give at most one per transport, e.g. --fault udp:silent --fault mqtt:garbage"
                    )
                }
                modes[transport] = setting.mode
            }
        }
    }

    subscript(transport: Transport) -> FaultMode { modes[transport] ?? .none }

    func isOff(_ transport: Transport) -> Bool { self[transport].switchesOff == transport }

    /// Sends `report` on `transport` as its fault has it: `send(corrupt)` once per copy, or
    /// nothing but a debug line that ends in `dropped`.
    func deliver(
        _ report: Report,
        on transport: Transport,
        logger: Logger,
        dropped: String,
        send: (_ corrupt: Bool) -> Void
    ) {
        let mode = self[transport]
        switch report.treatment(under: mode) {
        case .drop:
            logger.debug("fault \(transport.rawValue):\(mode.rawValue): \(dropped)")
        case .corrupt:
            send(true)
        case .send(let copies):
            for _ in 0..<copies { send(false) }
        }
    }

    /// `udp silent, mqtt none`, for the transports that are running: the only ones a reader cares about.
    func description(of transports: [Transport]) -> String {
        transports.map { "\($0.rawValue) \(self[$0].rawValue)" }.joined(separator: ", ")
    }
}
