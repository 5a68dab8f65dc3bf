/// Cuts the bytes a broker sends into MQTT 3.1.1 packets, whatever pieces they
/// arrive in, and checks each against the standard before anything acts on it:
/// a broker that sends something else is described, not guessed at.
public struct MQTTPacketReader: Sendable {
    /// What a broker may send a client (MQTT 3.1.1, section 3).
    public enum Packet: Sendable, Hashable {
        case connack(sessionPresent: Bool, returnCode: UInt8)
        case suback(packetID: UInt16, grantedQoS: [UInt8])
        case publish(topic: String, payload: [UInt8], qos: UInt8, retain: Bool, packetID: UInt16?)
        case pingresp
        /// PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK: well formed, but answers to
        /// nothing a QoS 0 client sends.
        case unexpected(name: String)
    }

    public struct Malformed: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String

        public init(_ reason: String) {
            self.reason = reason
        }

        public var description: String { reason }
    }

    /// The largest packet accepted: a status message is a byte or two, and a broker
    /// cannot make this process hold more than this for one packet.
    public let maximumPacketLength: Int
    private var buffer: [UInt8] = []
    private var start = 0

    public init(maximumPacketLength: Int = 1 << 20) {
        self.maximumPacketLength = maximumPacketLength
    }

    /// Bytes received and not yet returned as packets.
    public var pendingCount: Int { buffer.count - start }

    public mutating func append<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole packet, nil when more bytes are needed; throws at the first
    /// packet that breaks the standard (the connection is then of no further use).
    public mutating func next() throws(Malformed) -> Packet? {
        guard start < buffer.count else { return nil }
        let header = buffer[start]
        var length = 0
        var multiplier = 1
        var index = start + 1
        while true {
            guard index < buffer.count else { return nil }
            let digit = buffer[index]
            index += 1
            length += Int(digit & 0x7F) * multiplier
            if digit & 0x80 == 0 { break }
            guard index - start - 1 < 4 else { throw Malformed("a Remaining Length longer than four bytes") }
            multiplier *= 128
        }
        guard length <= maximumPacketLength else {
            throw Malformed("a packet of \(length) bytes, more than the \(maximumPacketLength) accepted")
        }
        guard buffer.count - index >= length else { return nil }
        let body = buffer[index..<(index + length)]
        start = index + length
        let packet = try Self.decode(header: header, body: body)
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 {
            buffer.removeFirst(start)
            start = 0
        }
        return packet
    }

    private static func decode(header: UInt8, body: ArraySlice<UInt8>) throws(Malformed) -> Packet {
        let type = header >> 4
        let flags = header & 0x0F
        switch type {
        case 3:
            return try decodePublish(flags: flags, body: body)
        case 2:
            try expect(flags: flags, 0, name: "CONNACK")
            guard body.count == 2 else { throw Malformed("a CONNACK of \(body.count) bytes instead of 2") }
            let acknowledge = body[body.startIndex]
            guard acknowledge & 0xFE == 0 else { throw Malformed("a CONNACK with reserved flags set (\(acknowledge))") }
            return .connack(sessionPresent: acknowledge == 1, returnCode: body[body.startIndex + 1])
        case 9:
            try expect(flags: flags, 0, name: "SUBACK")
            guard body.count >= 3 else { throw Malformed("a SUBACK of \(body.count) bytes, without a return code") }
            let codes = Array(body.dropFirst(2))
            if let bad = codes.first(where: { $0 > 2 && $0 != 0x80 }) {
                throw Malformed("a SUBACK with the return code \(bad)")
            }
            return .suback(packetID: UInt16(body[body.startIndex]) << 8 | UInt16(body[body.startIndex + 1]), grantedQoS: codes)
        case 13:
            try expect(flags: flags, 0, name: "PINGRESP")
            guard body.isEmpty else { throw Malformed("a PINGRESP of \(body.count) bytes instead of 0") }
            return .pingresp
        case 4, 5, 6, 7, 11:
            let names: [UInt8: String] = [4: "PUBACK", 5: "PUBREC", 6: "PUBREL", 7: "PUBCOMP", 11: "UNSUBACK"]
            let name = names[type] ?? "packet \(type)"
            try expect(flags: flags, type == 6 ? 2 : 0, name: name)
            guard body.count == 2 else { throw Malformed("a \(name) of \(body.count) bytes instead of 2") }
            return .unexpected(name: name)
        case 1, 8, 10, 12, 14:
            throw Malformed("a packet of type \(type), which only a client sends")
        default:
            throw Malformed("a packet of the reserved type \(type)")
        }
    }

    private static func decodePublish(flags: UInt8, body: ArraySlice<UInt8>) throws(Malformed) -> Packet {
        let qos = (flags >> 1) & 0x03
        guard qos < 3 else { throw Malformed("a PUBLISH with QoS 3") }
        guard body.count >= 2 else { throw Malformed("a PUBLISH of \(body.count) bytes, too short for its topic") }
        let topicLength = Int(body[body.startIndex]) << 8 | Int(body[body.startIndex + 1])
        var cursor = body.startIndex + 2
        guard body.endIndex - cursor >= topicLength else {
            throw Malformed("a PUBLISH whose topic of \(topicLength) bytes does not fit in it")
        }
        let topicBytes = body[cursor..<(cursor + topicLength)]
        cursor += topicLength
        guard let topic = String(validating: topicBytes, as: UTF8.self), !topicBytes.contains(0) else {
            throw Malformed("a PUBLISH whose topic is not valid UTF-8")
        }
        guard !topic.isEmpty, !topicBytes.contains(UInt8(ascii: "+")), !topicBytes.contains(UInt8(ascii: "#")) else {
            throw Malformed("a PUBLISH to the topic '\(topic)', which no message can have")
        }
        var packetID: UInt16?
        if qos > 0 {
            guard body.endIndex - cursor >= 2 else { throw Malformed("a QoS \(qos) PUBLISH without a packet identifier") }
            packetID = UInt16(body[cursor]) << 8 | UInt16(body[cursor + 1])
            cursor += 2
        }
        return .publish(topic: topic, payload: Array(body[cursor...]), qos: qos, retain: flags & 0x01 == 1, packetID: packetID)
    }

    private static func expect(flags: UInt8, _ expected: UInt8, name: String) throws(Malformed) {
        guard flags == expected else { throw Malformed("a \(name) with the header flags \(flags) instead of \(expected)") }
    }
}
