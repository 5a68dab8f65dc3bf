import CGateProtocol
import GateCore

/// A client's protocol v2 key (PROTOCOL-V2.md, "Keys"): the key id it is provisioned under
/// on the ESP32, and its direction keys, derived once from the 32-byte key `K` by the C
/// core (`Sources/CGateProtocol`), which `esp32-sim` and the firmware use too. `K` itself
/// is not kept; the direction keys are wiped when the last copy goes.
///
/// Everything a client signs or checks goes through here: open and status-query frames,
/// replies (type, key id, gate, counter, and a tag under `K_d2c`, compared in constant
/// time by the core) and the retained epoch announcement.
public struct V2Key: Sendable, CustomStringConvertible {
    public let id: UInt8
    let keys: DirectionKeys

    /// `text` as a credential holds the key (`gate_key_parse`): 64 hex digits, either
    /// case, at most one trailing newline. Nil otherwise; the error never quotes it.
    public init?(id: UInt8, text: UnsafeBufferPointer<UInt8>) {
        var key = [UInt8](repeating: 0, count: Int(GATE_KEY_SIZE))
        defer { gate_wipe(&key, key.count) }
        let parsed = text.withMemoryRebound(to: CChar.self) { gate_key_parse($0.baseAddress, $0.count, &key) }
        guard parsed else { return nil }
        self.id = id
        keys = DirectionKeys(key: key)
    }

    /// The key from its hex text (tests, `gate key new`'s check of what it stored).
    public init?(id: UInt8, hex: String) {
        var text = Array(hex.utf8)
        defer { gate_wipe(&text, text.count) }
        guard let key = text.withUnsafeBufferPointer({ V2Key(id: id, text: $0) }) else { return nil }
        self = key
    }

    /// Never the key: `key 1`.
    public var description: String { "key \(id)" }

    /// An open (`0x10`) for relay `gate` with the epoch the client knows and a counter
    /// reserved for it (`CounterStore`).
    public func open(epoch: UInt32, counter: UInt64, gate: UInt8 = 0) -> V2Frame {
        var bytes = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        keys.withKeys { gate_client_open($0, id, gate, epoch, counter, &bytes) }
        return V2Frame(bytes: bytes, type: .open, keyID: id, gate: gate, epoch: epoch, counter: counter)
    }

    /// A status query (`0x11`): the ESP32 answers `0x92` or `0x94` with its epoch and this
    /// counter, and never moves the relay.
    public func statusQuery(counter: UInt64, epoch: UInt32 = 0, gate: UInt8 = 0) -> V2Frame {
        var bytes = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        keys.withKeys { gate_client_status_query($0, id, gate, epoch, counter, &bytes) }
        return V2Frame(bytes: bytes, type: .statusQuery, keyID: id, gate: gate, epoch: epoch, counter: counter)
    }

    /// The reply, if `bytes` (one datagram) is a genuine one to `request`: 32 bytes,
    /// version 2, a reply type, the request's key id, gate and counter, and a valid tag
    /// under `K_d2c`. Anything else is nil, to be ignored.
    public func reply(to request: V2Frame, datagram bytes: [UInt8]) -> V2Reply? {
        check(bytes, gate: request.gate, counter: request.counter)
    }

    /// The same for an MQTT payload: exactly the frame's 64 lowercase hex digits.
    public func reply(to request: V2Frame, payload: [UInt8]) -> V2Reply? {
        V2Frame.bytes(fromHexPayload: payload).flatMap { check($0, gate: request.gate, counter: request.counter) }
    }

    /// The epoch in a retained announcement on `<status>/v2/epoch/<key_id>`: a `0x92`
    /// for this key, gate 0, counter 0, signed with `K_d2c`, as 64 lowercase hex digits.
    /// Nil for anything else (a forged or foreign one is ignored).
    public func epoch(fromAnnouncement payload: [UInt8]) -> UInt32? {
        guard let frame = V2Frame.bytes(fromHexPayload: payload),
            let reply = check(frame, gate: 0, counter: 0), reply.kind == .status
        else { return nil }
        return reply.epoch
    }

    private func check(_ bytes: [UInt8], gate: UInt8, counter: UInt64) -> V2Reply? {
        var epoch: UInt32 = 0
        let type = keys.withKeys { keys in
            bytes.withUnsafeBufferPointer {
                gate_client_check_reply(keys, id, gate, counter, $0.baseAddress, $0.count, &epoch)
            }
        }
        guard type != GATE_TYPE_NONE, let kind = V2ReplyKind(rawValue: UInt8(truncatingIfNeeded: type.rawValue))
        else { return nil }
        return V2Reply(kind: kind, epoch: epoch)
    }
}

extension V2Key {
    /// The epoch in a message on `topic`: only this key's announcement topic
    /// (`<status>/v2/epoch/<id>`) with a genuine announcement counts; any other topic or
    /// payload is nil, to be ignored.
    public func epoch(fromAnnouncementOn topic: String, payload: [UInt8], topics: V2Topics) -> UInt32? {
        guard topics.keyID(ofEpochTopic: topic) == id else { return nil }
        return epoch(fromAnnouncement: payload)
    }
}
