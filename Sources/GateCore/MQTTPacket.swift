/// The few MQTT 3.1.1 packets a one-shot opening sends, as bytes (OASIS MQTT
/// 3.1.1, section 3), for the plain-TCP client that spares `gate open` loading
/// libmosquitto with libssl and libcrypto.
///
/// Only what an opening needs: CONNECT with a clean session, SUBSCRIBE to one
/// topic, PUBLISH at QoS 0 and DISCONNECT. No I/O here.
public enum MQTTPacket {
    /// Remaining Length can say at most 268,435,455 (four 7-bit digits).
    public static let maximumRemainingLength = 268_435_455

    public enum EncodingError: Error, Sendable, Hashable, CustomStringConvertible {
        /// A string or binary field longer than its 16-bit length prefix allows.
        case fieldTooLong(name: String, count: Int)
        case packetTooLong(count: Int)

        public var description: String {
            switch self {
            case .fieldTooLong(let name, let count):
                "the \(name) is \(count) bytes long, and MQTT allows at most 65535"
            case .packetTooLong(let count):
                "the packet would be \(count) bytes long, and MQTT allows at most \(MQTTPacket.maximumRemainingLength)"
            }
        }
    }

    /// CONNECT for protocol level 4 (3.1.1), clean session, no will.
    public static func connect(
        clientID: String, keepAlive: UInt16, username: String?, password: [UInt8]?
    ) throws(EncodingError) -> [UInt8] {
        var flags: UInt8 = 0x02
        if username != nil { flags |= 0x80 }
        // 3.1.1 allows a password only with a user name (3.1.2.9).
        if username != nil, password != nil { flags |= 0x40 }
        var body: [UInt8] = [0x00, 0x04, 0x4D, 0x51, 0x54, 0x54, 0x04, flags, UInt8(keepAlive >> 8), UInt8(keepAlive & 0xFF)]
        try appendField(Array(clientID.utf8), named: "client id", to: &body)
        if let username {
            try appendField(Array(username.utf8), named: "user name", to: &body)
            if let password {
                try appendField(password, named: "password", to: &body)
            }
        }
        defer { wipe(&body) }
        return try frame(type: 0x10, body: body)
    }

    /// SUBSCRIBE to one topic filter at `qos`.
    public static func subscribe(packetID: UInt16, topic: String, qos: UInt8) throws(EncodingError) -> [UInt8] {
        var body: [UInt8] = [UInt8(packetID >> 8), UInt8(packetID & 0xFF)]
        try appendField(Array(topic.utf8), named: "topic", to: &body)
        body.append(qos)
        // The fixed header's flags are 0010 for SUBSCRIBE (3.8.1).
        return try frame(type: 0x82, body: body)
    }

    /// PUBLISH at QoS 0: no packet identifier, nothing acknowledges it.
    public static func publish(topic: String, payload: [UInt8], retain: Bool) throws(EncodingError) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(topic.utf8.count + 2 + payload.count)
        try appendField(Array(topic.utf8), named: "topic", to: &body)
        body.append(contentsOf: payload)
        return try frame(type: retain ? 0x31 : 0x30, body: body)
    }

    public static let disconnect: [UInt8] = [0xE0, 0x00]

    /// The Remaining Length's variable-length encoding (2.2.3): 7 bits a byte, low first.
    public static func remainingLength(_ count: Int) -> [UInt8] {
        var value = count
        var bytes: [UInt8] = []
        repeat {
            var digit = UInt8(value % 128)
            value /= 128
            if value > 0 { digit |= 0x80 }
            bytes.append(digit)
        } while value > 0
        return bytes
    }

    /// libmosquitto's words for a CONNACK return code (`mosquitto_connack_string`),
    /// so that a refusal reads the same whichever client met it.
    public static func connackWords(for code: Int32) -> String {
        switch code {
        case 0: "Connection Accepted."
        case 1: "Connection Refused: unacceptable protocol version."
        case 2: "Connection Refused: identifier rejected."
        case 3: "Connection Refused: broker unavailable."
        case 4: "Connection Refused: bad user name or password."
        case 5: "Connection Refused: not authorised."
        default: "Connection Refused: unknown reason."
        }
    }

    private static func frame(type: UInt8, body: [UInt8]) throws(EncodingError) -> [UInt8] {
        guard body.count <= maximumRemainingLength else { throw .packetTooLong(count: body.count) }
        var packet = [type] + remainingLength(body.count)
        packet.append(contentsOf: body)
        return packet
    }

    private static func appendField(_ bytes: [UInt8], named name: String, to body: inout [UInt8]) throws(EncodingError) {
        guard bytes.count <= 0xFFFF else { throw .fieldTooLong(name: name, count: bytes.count) }
        body.append(UInt8(bytes.count >> 8))
        body.append(UInt8(bytes.count & 0xFF))
        body.append(contentsOf: bytes)
    }

    /// The CONNECT body holds the password: no copy of it is left behind.
    private static func wipe(_ bytes: inout [UInt8]) {
        for index in bytes.indices { bytes[index] = 0 }
    }
}
