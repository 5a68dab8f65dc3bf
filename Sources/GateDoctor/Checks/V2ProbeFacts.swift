import GateCore

/// What `gate doctor` found when it asked the ESP32 for its status under protocol v2
/// (one signed status query over UDP, which never moves the relay).
public enum V2ProbeFacts: Sendable, Equatable {
    /// No usable key: the credential lookup's sentence.
    case noKey(String)
    /// The query could not be sent, or nobody listens: why.
    case unreachable(String)
    /// A genuine `0x92` or `0x94` came back from `target`.
    case answered(V2DeviceStatus, target: String)
    /// Nothing genuine within `budget`; `ignored` other datagrams came.
    case silent(ignored: Int, budget: Duration, target: String)
}
