import CGateProtocol

/// A key as `gate key new` prints and stores it, and as the firmware and the simulator
/// take it: its 32 bytes as 64 lowercase hex digits (PROTOCOL-V2.md, "Keys").
public enum V2KeyText {
    public static let byteCount = Int(GATE_KEY_SIZE)

    /// The digits of `key` (32 bytes) as ASCII bytes, for a `Secret` and a `write`, never
    /// a `String` (which could not be wiped). Nil for any other length.
    public static func digits(of key: [UInt8]) -> [UInt8]? {
        guard key.count == byteCount else { return nil }
        var text = [CChar](repeating: 0, count: Int(GATE_KEY_HEX_SIZE))
        defer { gate_wipe(&text, text.count) }
        gate_hex_encode(key, key.count, &text)
        return text.map { UInt8(bitPattern: $0) }
    }
}
