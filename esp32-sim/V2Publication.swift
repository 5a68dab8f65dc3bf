/// What a protocol 2 device publishes; `MQTTTransport` knows the topics.
enum V2Publication: Sendable {
    /// Plain `1`, `0` (or `x` under the garbage fault) on the status topic.
    case relay(String)
    /// A reply frame as 64 lowercase hex digits on `<status>/v2`.
    case reply(String)
    /// A `0x92` as hex, retained, on `<status>/v2/epoch/<key_id>`.
    case announcement(keyID: UInt8, hex: String)
}
