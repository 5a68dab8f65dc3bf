/// The three outcomes an opening can have.
public enum OpeningOutcome: String, Decodable, Sendable, Hashable {
    case success
    case timeout
    case error
}
