/// Which adapters an opening tries, in which order, and why others are left out (docs/CONTRACT.md#adapter-order).
public enum AdapterSelection: String, Sendable, Hashable, CaseIterable {
    /// UDP when it can work, then MQTT.
    case auto
    /// Only UDP, even off-link: the user asked for it.
    case udp
    /// Only MQTT.
    case mqtt

    public var forcedAdapter: AdapterKind? {
        switch self {
        case .auto: return nil
        case .udp: return .udp
        case .mqtt: return .mqtt
        }
    }
}
