/// The failures of an opening, named as in the original design, with their exit codes (docs/CONTRACT.md#exit-codes).
public enum GateKeeperError: String, Decodable, Error, Sendable, Hashable, CaseIterable {
    case configurationMissing
    case udpConnectionFailed
    case mqttConnectionFailed
    case allAdaptersFailed
    case operationTimeout
    case operationInProgress
    case invalidResponse

    /// The exit status of `gate open` for this error (docs/CONTRACT.md#exit-codes); sysexits.h where one fits.
    public var exitCode: Int32 {
        switch self {
        case .allAdaptersFailed, .udpConnectionFailed, .mqttConnectionFailed: return ExitStatus.unavailable
        case .operationInProgress: return ExitStatus.temporaryFailure
        case .invalidResponse: return ExitStatus.protocolError
        case .configurationMissing: return ExitStatus.configuration
        case .operationTimeout: return ExitStatus.timeout
        }
    }

    /// The `outcome` field of the JSON result: a trigger that left without a
    /// confirmed cycle is a timeout; everything else that fails is an error.
    public var outcome: OpeningOutcome {
        switch self {
        case .operationTimeout: return .timeout
        case .configurationMissing, .udpConnectionFailed, .mqttConnectionFailed, .allAdaptersFailed,
            .operationInProgress, .invalidResponse:
            return .error
        }
    }

    /// The connection failure for an adapter forced with `--via`.
    public static func connectionFailed(_ adapter: AdapterKind) -> GateKeeperError {
        switch adapter {
        case .udp: return .udpConnectionFailed
        case .mqtt: return .mqttConnectionFailed
        }
    }
}

extension GateKeeperError {
    /// What the error means, in a few words for people.
    public var summary: String {
        switch self {
        case .configurationMissing: return "no usable configuration"
        case .udpConnectionFailed: return "the ESP32 could not be reached over UDP"
        case .mqttConnectionFailed: return "the ESP32 could not be reached through the MQTT broker"
        case .allAdaptersFailed: return "no adapter reached the ESP32"
        case .operationTimeout:
            return "a trigger was sent but the relay cycle was not confirmed; the relay may have cycled"
        case .operationInProgress: return "another opening is in progress"
        case .invalidResponse: return "the ESP32 answered outside the protocol"
        }
    }
}

extension GateKeeperError {
    /// A few words for a history line or a panel label, where `summary` is too long.
    public var brief: String {
        switch self {
        case .configurationMissing: return "configuration problem"
        case .udpConnectionFailed: return "ESP32 not reached over UDP"
        case .mqttConnectionFailed: return "ESP32 not reached through MQTT"
        case .allAdaptersFailed: return "ESP32 not reached"
        case .operationTimeout: return "relay cycle not confirmed"
        case .operationInProgress: return "refused: busy"
        case .invalidResponse: return "answer outside the protocol"
        }
    }

    /// The words for an error name read from a shared file (status, history): an
    /// unknown name is shown as it is, escaped, since the file is not trusted.
    public static func brief(recorded name: String) -> String {
        GateKeeperError(rawValue: name)?.brief ?? SafeText.escaped(name)
    }
}
