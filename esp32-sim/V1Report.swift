/// What protocol 1's relay says, independent of the wire: UDP sends 0x01 / 0x00 / 0x7f,
/// MQTT publishes `1` / `0` / `x`.
enum V1Report: Sendable, Equatable {
    case activated
    case released
    case garbage
}
