public enum SecretLookup: Sendable {
    case found(Secret)
    /// This source works but holds no such secret.
    case notFound
    /// This source cannot be asked (no credentials directory, no session bus…): why.
    case unavailable(String)
    /// The source has the secret but it cannot be used (unreadable, empty): why.
    case failed(String)
}
