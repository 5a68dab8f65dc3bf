import CGateProtocol

/// One request as it goes out (PROTOCOL-V2.md, "The frame"): the same 32 bytes over UDP
/// and, on fallback, over MQTT, and the fields a reply is matched on.
public struct V2Frame: Sendable, Equatable {
    public enum Kind: UInt8, Sendable {
        case open = 0x10
        case statusQuery = 0x11
    }

    /// The 32 bytes: one UDP datagram.
    public let bytes: [UInt8]
    public let type: Kind
    public let keyID: UInt8
    public let gate: UInt8
    public let epoch: UInt32
    public let counter: UInt64

    /// The frame on MQTT: 64 lowercase hex digits, nothing around them.
    public var hex: String { V2Frame.hex(bytes) }

    /// Lowercase hex of any bytes (the core's `gate_hex_encode`): frames on MQTT, and the
    /// key that `gate key new` prints.
    public static func hex(_ bytes: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: bytes.count * 2)
        gate_hex_encode(bytes, bytes.count, &text)
        return String(decoding: text.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The 32 bytes of an MQTT payload that is exactly 64 lowercase hex digits.
    static func bytes(fromHexPayload payload: [UInt8]) -> [UInt8]? {
        var frame = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        let decoded = payload.withUnsafeBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { gate_frame_from_hex($0.baseAddress, $0.count, &frame) }
        }
        return decoded ? frame : nil
    }
}
