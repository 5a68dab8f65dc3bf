/// The protocol gate speaks with the ESP32 (docs/CONTRACT.md#configuration, PROTOCOL-V2.md).
/// v2's key is a credential (`esp32-key`), never a key of this table.
public struct ESP32Config: Sendable, Equatable {
    public enum ProtocolVersion: Int, Sendable, Equatable {
        /// The plain `0x01` and `1`/`0`: anyone on the LAN or the broker can open.
        case v1 = 1
        /// Signed 32-byte frames with a counter and the ESP32's epoch.
        case v2 = 2
    }

    public static let defaultKeyID: UInt8 = 1

    public var protocolVersion: ProtocolVersion
    /// Which of the ESP32's provisioned keys signs this client's frames (1–255).
    public var keyID: UInt8

    public init(protocolVersion: ProtocolVersion = .v1, keyID: UInt8 = ESP32Config.defaultKeyID) {
        self.protocolVersion = protocolVersion
        self.keyID = keyID
    }
}
