import GateCore
import Testing

@Suite("MQTT 3.1.1 packets written and read (the plain-TCP client's codec)")
struct MQTTPacketTests {
    @Test("CONNECT, anonymous: protocol MQTT level 4, clean session, keep-alive 60, the client id")
    func connectAnonymous() throws {
        let packet = try MQTTPacket.connect(clientID: "gate-0000abcd", keepAlive: 60, username: nil, password: nil)
        let expected: [UInt8] = [0x10, 25, 0x00, 0x04] + Array("MQTT".utf8) + [0x04, 0x02, 0x00, 0x3C, 0x00, 13] + Array("gate-0000abcd".utf8)
        #expect(packet == expected)
    }

    @Test("CONNECT with a user name and a password: both flags, both fields in order")
    func connectWithCredentials() throws {
        let packet = try MQTTPacket.connect(clientID: "c", keepAlive: 60, username: "gate", password: Array("pw".utf8))
        let body: [UInt8] = [0x00, 0x04] + Array("MQTT".utf8) + [0x04, 0xC2, 0x00, 0x3C, 0x00, 1, 0x63, 0x00, 4] + Array("gate".utf8) + [0x00, 2] + Array("pw".utf8)
        #expect(packet == [0x10, UInt8(body.count)] + body)
    }

    @Test("CONNECT with a user name only: no password flag (3.1.1 allows a password only with a name)")
    func connectUsernameOnly() throws {
        let packet = try MQTTPacket.connect(clientID: "c", keepAlive: 60, username: "gate", password: nil)
        #expect(packet[9] == 0x82)
        let orphan = try MQTTPacket.connect(clientID: "c", keepAlive: 60, username: nil, password: Array("pw".utf8))
        #expect(orphan[9] == 0x02 && !orphan.contains(0x70), "a password without a name is not sent")
    }

    @Test("SUBSCRIBE: header flags 0010, the packet id, the filter and its QoS")
    func subscribe() throws {
        let packet = try MQTTPacket.subscribe(packetID: 0x0102, topic: "a/b", qos: 0)
        #expect(packet == [0x82, 8, 0x01, 0x02, 0x00, 3, 0x61, 0x2F, 0x62, 0x00])
    }

    @Test("PUBLISH at QoS 0: no packet id; the retain flag in bit 0")
    func publish() throws {
        #expect(try MQTTPacket.publish(topic: "t", payload: Array("17".utf8), retain: false) == [0x30, 5, 0x00, 1, 0x74, 0x31, 0x37])
        #expect(try MQTTPacket.publish(topic: "t", payload: [], retain: true) == [0x31, 3, 0x00, 1, 0x74])
        #expect(MQTTPacket.disconnect == [0xE0, 0x00])
    }

    @Test("Remaining Length at each boundary of its 1 to 4 bytes (3.1.1, table 2.4)", arguments: [
        (0, [0x00]), (127, [0x7F]), (128, [0x80, 0x01]), (16_383, [0xFF, 0x7F]), (16_384, [0x80, 0x80, 0x01]),
        (2_097_151, [0xFF, 0xFF, 0x7F]), (2_097_152, [0x80, 0x80, 0x80, 0x01]), (268_435_455, [0xFF, 0xFF, 0xFF, 0x7F]),
    ] as [(Int, [UInt8])])
    func remainingLength(value: Int, bytes: [UInt8]) {
        #expect(MQTTPacket.remainingLength(value) == bytes)
    }

    @Test("A field longer than 65535 bytes is refused by name, not truncated")
    func fieldTooLong() {
        #expect(throws: MQTTPacket.EncodingError.fieldTooLong(name: "topic", count: 70_000)) {
            try MQTTPacket.publish(topic: String(repeating: "t", count: 70_000), payload: [], retain: false)
        }
    }

    /// CONNACK, SUBACK, a retained PUBLISH, a live one of 200 bytes (two-byte length), a QoS 1 one, PINGRESP.
    static let stream: [UInt8] = [0x20, 2, 0, 0, 0x90, 3, 0, 1, 0]
        + [0x31, 4, 0, 1, 0x73, 0x31]
        + [0x30, 0xCB, 0x01, 0, 1, 0x73] + [UInt8](repeating: 0x30, count: 200)
        + [0x32, 6, 0, 1, 0x73, 0x12, 0x34, 0x30]
        + [0xD0, 0]

    static let packets: [MQTTPacketReader.Packet] = [
        .connack(sessionPresent: false, returnCode: 0),
        .suback(packetID: 1, grantedQoS: [0]),
        .publish(topic: "s", payload: [0x31], qos: 0, retain: true, packetID: nil),
        .publish(topic: "s", payload: [UInt8](repeating: 0x30, count: 200), qos: 0, retain: false, packetID: nil),
        .publish(topic: "s", payload: [0x30], qos: 1, retain: false, packetID: 0x1234),
        .pingresp,
    ]

    @Test("The same packets whatever pieces the bytes arrive in: whole, byte by byte, cut anywhere")
    func readsAcrossAnyCut() throws {
        for size in [Self.stream.count, 1, 2, 3, 5, 7, 64] {
            var reader = MQTTPacketReader()
            var read: [MQTTPacketReader.Packet] = []
            var offset = 0
            while offset < Self.stream.count {
                reader.append(Self.stream[offset..<min(offset + size, Self.stream.count)])
                offset += size
                while let packet = try reader.next() { read.append(packet) }
            }
            #expect(read == Self.packets, "pieces of \(size)")
            #expect(reader.pendingCount == 0)
        }
    }

    @Test("What the encoder publishes, the reader reads back")
    func publishRoundTrip() throws {
        var reader = MQTTPacketReader()
        let payload = [UInt8](repeating: 0x41, count: 20_000)
        reader.append(try MQTTPacket.publish(topic: "iot/house/gate/esp32/status", payload: payload, retain: true))
        #expect(try reader.next() == .publish(topic: "iot/house/gate/esp32/status", payload: payload, qos: 0, retain: true, packetID: nil))
        #expect(try reader.next() == nil)
    }

    @Test("Packets no broker may send are named in the error", arguments: [
        ([0x20, 3, 0, 0, 0], "a CONNACK of 3 bytes instead of 2"),
        ([0x21, 2, 0, 0], "a CONNACK with the header flags 1 instead of 0"),
        ([0x20, 2, 2, 0], "a CONNACK with reserved flags set (2)"),
        ([0x90, 3, 0, 1, 3], "a SUBACK with the return code 3"),
        ([0x90, 2, 0, 1], "a SUBACK of 2 bytes, without a return code"),
        ([0x36, 4, 0, 1, 0x73, 0x31], "a PUBLISH with QoS 3"),
        ([0x30, 4, 0, 1, 0x2B, 0x31], "a PUBLISH to the topic '+', which no message can have"),
        ([0x30, 3, 0, 1, 0xFF], "a PUBLISH whose topic is not valid UTF-8"),
        ([0x30, 3, 0, 9, 0x73], "a PUBLISH whose topic of 9 bytes does not fit in it"),
        ([0x32, 3, 0, 1, 0x73], "a QoS 1 PUBLISH without a packet identifier"),
        ([0x10, 0], "a packet of type 1, which only a client sends"),
        ([0xF0, 0], "a packet of the reserved type 15"),
        ([0x00, 0], "a packet of the reserved type 0"),
        ([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], "a Remaining Length longer than four bytes"),
        ([0x30, 0x80, 0x80, 0x80, 0x01], "a packet of 2097152 bytes, more than the 1048576 accepted"),
        ([0xD0, 1, 0], "a PINGRESP of 1 bytes instead of 0"),
    ] as [([UInt8], String)])
    func malformed(bytes: [UInt8], reason: String) {
        var reader = MQTTPacketReader()
        reader.append(bytes)
        #expect(throws: MQTTPacketReader.Malformed(reason)) { try reader.next() }
    }

    @Test("Acknowledgements of what a QoS 0 client never sends are read as unexpected, by name")
    func unexpected() throws {
        var reader = MQTTPacketReader()
        reader.append([0x40, 2, 0, 1, 0x62, 2, 0, 1, 0xB0, 2, 0, 1])
        #expect(try reader.next() == .unexpected(name: "PUBACK"))
        #expect(try reader.next() == .unexpected(name: "PUBREL"))
        #expect(try reader.next() == .unexpected(name: "UNSUBACK"))
    }

    @Test("An incomplete packet waits for more bytes instead of failing")
    func incomplete() throws {
        var reader = MQTTPacketReader()
        reader.append([0x30, 0x80])
        #expect(try reader.next() == nil)
        reader.append([0x01])
        #expect(try reader.next() == nil)
        #expect(reader.pendingCount == 3)
    }
}
