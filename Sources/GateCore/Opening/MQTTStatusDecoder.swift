/// Turns a payload on the status topic into a protocol event (docs/CONTRACT.md#protocol-over-mqtt):
/// `1` or `0`, surrounding white space trimmed; anything else is invalid.
public enum MQTTStatusDecoder {
    public static func event(for payload: [UInt8], topic: String) -> AdapterEvent {
        var start = payload.startIndex
        var end = payload.endIndex
        while start < end, isSpace(payload[start]) { start += 1 }
        while end > start, isSpace(payload[end - 1]) { end -= 1 }
        let trimmed = payload[start..<end]
        if trimmed.elementsEqual([0x31]) { return .relay(.activated) }
        if trimmed.elementsEqual([0x30]) { return .relay(.released) }
        return .invalid(.unexpectedPayload(Array(trimmed.prefix(32)), count: trimmed.count, topic: topic))
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d || byte == 0x0b || byte == 0x0c
    }

    /// A short, printable rendering of an unexpected payload.
    /// - Parameters:
    ///   - bytes: the payload, or its first bytes;
    ///   - count: the whole payload's length.
    static func shown(_ bytes: ArraySlice<UInt8>, count: Int) -> String {
        if count == 0 { return "an empty payload" }
        let printable = bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f }
        if printable && count <= 32 {
            return "\"" + String(decoding: bytes, as: UTF8.self) + "\""
        }
        let hex = bytes.prefix(16).map { byte -> String in
            let text = String(byte, radix: 16)
            return text.count == 1 ? "0" + text : text
        }.joined(separator: " ")
        return "\(count) bytes (\(hex)\(count > 16 ? " …" : ""))"
    }
}
