/// An MQTT CONNECT (over TLS when configured) up to the broker's CONNACK; nothing
/// is subscribed or published.
public enum BrokerFacts: Sendable, Hashable {
    case accepted(Duration)
    /// CONNACK with a refusal: `words` are the broker's (`Connection Refused: not authorised.`).
    case refused(code: Int32, words: String)
    case tlsFailed(String)
    case connectFailed(String)
    /// The broker closed the connection before any CONNACK.
    case closed(String)
    case noAnswer
    /// The client could not even be prepared (libmosquitto missing, a CA file it refuses).
    case setupFailed(String)

    /// CONNACK codes of MQTT 3.1.1: the client id, and the login itself, refused.
    public static let identifierRejected: Int32 = 2
    public static let badCredentials: Int32 = 4
    public static let notAuthorised: Int32 = 5
}
