/// The MQTT password lookup (never the password itself).
public enum PasswordFacts: Sendable, Hashable {
    case found(source: String, location: String?)
    /// Every source asked; each one's note (`the Secret Service: no entry`).
    case missing(notes: [String])
    /// A source has one that cannot be used.
    case unusable(source: String, why: String)
}
