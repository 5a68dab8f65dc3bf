/// The state an opening is in, as shown to users and written to the status file.
public enum GateState: String, Sendable, Hashable, CaseIterable, Decodable {
    case ready
    case triggering
    case waitingForRelayClose = "waiting_for_relay_close"
    case timeout
    case error
}
