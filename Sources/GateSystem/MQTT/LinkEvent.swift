/// News of the link for whoever asked for `LinkExtras`; on libmosquitto's thread.
public enum LinkEvent: Sendable {
    /// CONNACK accepted (first connection or a reconnection); subscriptions requested.
    case connected
    case subscribed(topic: String, refused: Bool)
    /// A message on one of `extras.subscriptions`.
    case message(topic: String, payload: [UInt8], retained: Bool)
}
