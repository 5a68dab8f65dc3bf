/// How one adapter's attempt ended, as listed in `attempts` of `gate open --json`.
public enum AttemptOutcome: String, Decodable, Sendable, Hashable {
    case success
    /// Relay activated but the release never came.
    case timeout
    /// Nothing at all came back within the budget.
    case noAnswer = "no_answer"
    /// The network refused before any answer, or the budget ended before anything was sent.
    case unreachable
    case invalidResponse = "invalid_response"
    /// The adapter could not run as configured; nothing was sent.
    case misconfigured
    /// Not tried: not configured, off-link, or the relay was busy.
    case skipped
}
