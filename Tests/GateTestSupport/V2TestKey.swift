import CGateProtocol

/// A client of protocol v2 in a test, through the one C core (`Sources/CGateProtocol`):
/// the frames it signs and the replies it accepts are exactly those `gate` and the
/// firmware build and check, so a test never re-implements the protocol.
public struct V2TestKey: Sendable {
    /// A reply that passed `gate_client_check_reply`: genuine, for the request asked about.
    public struct Reply: Equatable, Sendable, CustomStringConvertible {
        public let type: UInt8
        public let epoch: UInt32

        public init(type: UInt8, epoch: UInt32) {
            self.type = type
            self.epoch = epoch
        }

        public var description: String { "0x\(String(type, radix: 16)) epoch \(String(epoch, radix: 16))" }
    }

    public static let relayOn: UInt8 = 0x90
    public static let relayOff: UInt8 = 0x91
    public static let status: UInt8 = 0x92
    public static let busy: UInt8 = 0x93
    public static let statusV1Accepted: UInt8 = 0x94
    public static let staleEpoch: UInt8 = 0x9E

    public let id: UInt8
    /// The key as `gate key new` prints it: 64 lowercase hex digits.
    public let hex: String
    private let keys: gate_direction_keys

    /// nil unless `hex` is a key as `gate_key_parse` reads one.
    public init?(id: UInt8, hex: String) {
        var key = [UInt8](repeating: 0, count: Int(GATE_KEY_SIZE))
        let text = Array(hex.utf8)
        let parsed = text.withUnsafeBytes { raw in
            gate_key_parse(raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count, &key)
        }
        guard parsed else { return nil }
        var keys = gate_direction_keys()
        gate_direction_keys_derive(key, &keys)
        self.id = id
        self.hex = hex
        self.keys = keys
    }

    /// The direction keys as hex: requests' (c2d) and replies' (d2c).
    public var directionKeysHex: (c2d: String, d2c: String) {
        (
            hexString(withUnsafeBytes(of: keys.c2d) { Array($0) }),
            hexString(withUnsafeBytes(of: keys.d2c) { Array($0) })
        )
    }

    public func open(epoch: UInt32, counter: UInt64, gate: UInt8 = 0) -> [UInt8] {
        var frame = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        withUnsafePointer(to: keys) { gate_client_open($0, id, gate, epoch, counter, &frame) }
        return frame
    }

    public func statusQuery(epoch: UInt32 = 0, counter: UInt64 = 0, gate: UInt8 = 0) -> [UInt8] {
        var frame = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        withUnsafePointer(to: keys) { gate_client_status_query($0, id, gate, epoch, counter, &frame) }
        return frame
    }

    /// Any frame signed as the device signs (d2c) or as a client does (c2d), for the
    /// vectors' replies.
    public func frame(
        type: UInt8,
        epoch: UInt32,
        counter: UInt64,
        gate: UInt8 = 0,
        version: UInt8 = 2,
        keyID: UInt8? = nil,
        signedAsReply: Bool
    ) -> [UInt8] {
        var header = gate_header(
            version: version,
            type: type,
            key_id: keyID ?? id,
            gate: gate,
            epoch: epoch,
            counter: counter
        )
        var frame = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        let directionKey = withUnsafeBytes(of: signedAsReply ? keys.d2c : keys.c2d) { Array($0) }
        gate_frame_write(&header, directionKey, &frame)
        return frame
    }

    /// The reply, if `bytes` is a genuine one for (this key, `gate`, `counter`).
    public func check(reply bytes: [UInt8], counter: UInt64, gate: UInt8 = 0) -> Reply? {
        var epoch: UInt32 = 0
        let type = withUnsafePointer(to: keys) { keys in
            bytes.withUnsafeBufferPointer {
                gate_client_check_reply(keys, id, gate, counter, $0.baseAddress, $0.count, &epoch)
            }
        }
        guard type != GATE_TYPE_NONE else { return nil }
        return Reply(type: UInt8(type.rawValue), epoch: epoch)
    }

    /// The same for an MQTT payload: the frame as exactly 64 lowercase hex digits.
    public func check(hexReply payload: [UInt8], counter: UInt64, gate: UInt8 = 0) -> Reply? {
        var frame = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        let decoded = payload.withUnsafeBytes {
            gate_frame_from_hex($0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count, &frame)
        }
        return decoded ? check(reply: frame, counter: counter, gate: gate) : nil
    }
}

/// Lowercase hex, as frames travel on MQTT.
public func hexString(_ bytes: [UInt8]) -> String {
    var text = [CChar](repeating: 0, count: bytes.count * 2)
    gate_hex_encode(bytes, bytes.count, &text)
    return String(decoding: text.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Bytes from hex of either case; nil for anything else.
public func bytesFromHex(_ text: String) -> [UInt8]? {
    let characters = Array(text.utf8)
    guard characters.count % 2 == 0 else { return nil }
    var bytes = [UInt8](repeating: 0, count: characters.count / 2)
    let decoded = characters.withUnsafeBytes {
        gate_hex_decode($0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count, &bytes, bytes.count)
    }
    return decoded ? bytes : nil
}
