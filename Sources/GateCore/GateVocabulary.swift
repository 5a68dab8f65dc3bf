/// The transports that can carry a trigger to the ESP32, in the order they are tried.
public enum AdapterKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case udp
    case mqtt

    public var description: String { rawValue }
}

/// What the ESP32 reports about its relay (`1`/`0x01` and `0`/`0x00`).
public enum RelayState: Sendable, Hashable {
    case activated
    case released
}

/// The state an opening is in, as shown to users and written to the status file.
public enum GateState: String, Sendable, Hashable, CaseIterable {
    case ready
    case triggering
    case waitingForRelayClose = "waiting_for_relay_close"
    case timeout
    case error
}

/// What an adapter observed, in the words of the protocol rather than the transport.
///
/// Adapters translate datagrams and MQTT messages into these; the state
/// machine decides what they mean for the opening.
public enum AdapterEvent: Sendable, Hashable {
    /// The trigger left this machine.
    case sent
    /// The ESP32 reported its relay state.
    case relay(RelayState)
    /// The ESP32's address answered something outside the protocol.
    case invalid(String)
    /// The network refused at once (no route, ICMP port unreachable, connect refused):
    /// there is no evidence that the trigger reached the ESP32.
    case unreachable(String)
    /// The adapter cannot run as configured (a missing password, say): nothing was sent.
    case misconfigured(String)
    /// The adapter's budget ran out.
    case deadlineReached
}

/// How one adapter's attempt ended, as listed in `attempts` of `gate open --json`.
public enum AttemptOutcome: String, Sendable, Hashable {
    case success
    /// Relay activated but the release never came.
    case timeout
    /// Nothing at all came back within the budget.
    case noAnswer = "no_answer"
    /// The network refused before any answer.
    case unreachable
    case invalidResponse = "invalid_response"
    /// The adapter could not run as configured; nothing was sent.
    case misconfigured
    /// Not tried: not configured, off-link, or another adapter was forced.
    case skipped
}

/// One adapter's part in an opening.
public struct AttemptRecord: Sendable, Hashable {
    public var adapter: AdapterKind
    public var outcome: AttemptOutcome
    /// Why it ended that way, for people; `nil` on success.
    public var reason: String?
    /// `nil` for an adapter that was skipped.
    public var duration: Duration?

    public init(adapter: AdapterKind, outcome: AttemptOutcome, reason: String?, duration: Duration?) {
        self.adapter = adapter
        self.outcome = outcome
        self.reason = reason
        self.duration = duration
    }
}
