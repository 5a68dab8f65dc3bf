/// The four looks a panel distinguishes.
public enum StatusLook: String, Sendable, CaseIterable {
    /// Nothing running; the last opening, if any, finished (or its failure was reset).
    case ready
    /// `triggering` or `waiting_for_relay_close`: an opening is under way.
    case busy
    /// `timeout` or `error`, until `reset_at`.
    case failed
    /// Ready again, but the last opener died mid-cycle: nobody knows what the relay did.
    case interrupted

    public init(_ record: StatusRecord) {
        switch record.state {
        case .triggering, .waitingForRelayClose: self = .busy
        case .timeout, .error: self = .failed
        case .ready: self = record.last?.outcome == .interrupted ? .interrupted : .ready
        }
    }

    /// Readable on dark and light panels alike.
    public var color: String {
        switch self {
        case .ready: return "#55aa55"
        case .busy: return "#3584e4"
        case .failed: return "#e01b24"
        case .interrupted: return "#ff8c00"
        }
    }
}
