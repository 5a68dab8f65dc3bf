/// The transports that can carry a trigger to the ESP32, in the order they are tried.
public enum AdapterKind: String, Decodable, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case udp
    case mqtt

    public var description: String { rawValue }
}
