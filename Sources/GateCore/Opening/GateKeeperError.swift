/// The failures of an opening, named as in the original design, with their exit codes (docs/CONTRACT.md#exit-codes).
public enum GateKeeperError: String, Error, Sendable, Hashable, CaseIterable {
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

/// Exit statuses shared by every command (docs/CONTRACT.md#exit-codes).
public enum ExitStatus {
    public static let success: Int32 = 0
    public static let usage: Int32 = 64  // EX_USAGE
    public static let unavailable: Int32 = 69  // EX_UNAVAILABLE
    public static let software: Int32 = 70  // EX_SOFTWARE
    public static let temporaryFailure: Int32 = 75  // EX_TEMPFAIL
    public static let protocolError: Int32 = 76  // EX_PROTOCOL
    public static let configuration: Int32 = 78  // EX_CONFIG
    public static let timeout: Int32 = 124  // as timeout(1)
}

/// The three outcomes an opening can have.
public enum OpeningOutcome: String, Sendable, Hashable {
    case success
    case timeout
    case error
}

/// Everything `gate open` reports about one opening.
public struct OpeningResult: Sendable, Hashable {
    public var error: GateKeeperError?
    /// The adapter that gave the final word (the one that succeeded, that saw the
    /// timeout or invalid answer, or whose trigger went unanswered); `nil` when no
    /// trigger can have reached the ESP32.
    public var adapter: AdapterKind?
    public var duration: Duration
    /// In adapter order, up to the attempt that decided the outcome.
    public var attempts: [AttemptRecord]
    /// Said by the caller when the opening ended before any adapter (the lock's
    /// holder, the cooldown, a configuration problem); otherwise `message` is
    /// worded from the attempts.
    public var explanation: String?

    public init(
        error: GateKeeperError?,
        adapter: AdapterKind?,
        duration: Duration,
        attempts: [AttemptRecord],
        explanation: String? = nil
    ) {
        self.error = error
        self.adapter = adapter
        self.duration = duration
        self.attempts = attempts
        self.explanation = explanation
    }

    public var outcome: OpeningOutcome { error?.outcome ?? .success }
    public var exitCode: Int32 { error?.exitCode ?? ExitStatus.success }
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
