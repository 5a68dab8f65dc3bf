import GateCore
import GateTestSupport
import GateV2
import Testing

/// `GateV2` (gate's side of protocol v2) against the one vectors file that the C tests,
/// the simulator's tests and the firmware's tests read: the frames it builds are the
/// vectors' bytes, and the replies it accepts are exactly the genuine ones.
@Suite("Protocol v2: keys, frames and replies through the C core")
struct V2KeyTests {
    let vectors: V2Vectors

    init() throws {
        vectors = try V2Vectors()
    }

    private func key(_ material: String, id: UInt8) throws -> V2Key {
        let hex = try #require(vectors.materials[material]?.key)
        return try #require(V2Key(id: id, hex: hex))
    }

    @Test func requestsAreTheVectorsBytes() throws {
        let requests = vectors.frames.filter { !$0.signedAsReply && $0.version == 2 }
        #expect(requests.count >= 4)
        for vector in requests {
            let key = try key(vector.material, id: vector.keyID)
            #expect(vector.type == 0x10 || vector.type == 0x11, "\(vector.name)")
            let frame =
                vector.type == 0x10
                ? key.open(epoch: vector.epoch, counter: vector.counter, gate: vector.gate)
                : key.statusQuery(counter: vector.counter, epoch: vector.epoch, gate: vector.gate)
            #expect(frame.hex == vector.hex, "\(vector.name)")
            #expect(V2Frame.hex(frame.bytes) == vector.hex && frame.bytes.count == 32)
            #expect(frame.counter == vector.counter && frame.gate == vector.gate && frame.keyID == vector.keyID)
        }
    }

    @Test func genuineRepliesAreReadWithTheirTypeAndEpoch() throws {
        let replies = vectors.frames.filter(\.signedAsReply)
        #expect(replies.count >= 6)
        for vector in replies {
            let key = try key(vector.material, id: vector.keyID)
            let request = key.statusQuery(counter: vector.counter, gate: vector.gate)
            let bytes = try #require(bytesFromHex(vector.hex))
            let expected = V2Reply(kind: try #require(V2ReplyKind(rawValue: vector.type)), epoch: vector.epoch)
            #expect(key.reply(to: request, datagram: bytes) == expected, "\(vector.name)")
            #expect(key.reply(to: request, payload: Array(vector.hex.utf8)) == expected, "\(vector.name) as hex")
        }
    }

    @Test func anythingElseIsIgnored() throws {
        let key = try key("A", id: 1)
        let vector = try vectors.frame(named: "relay-on")
        let bytes = try #require(bytesFromHex(vector.hex))
        let request = key.open(epoch: vector.epoch, counter: vector.counter)
        #expect(key.reply(to: request, datagram: bytes) != nil)
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= 0x01
            #expect(key.reply(to: request, datagram: flipped) == nil, "bit 0 of byte \(index) flipped")
        }
        #expect(key.reply(to: key.open(epoch: vector.epoch, counter: 2), datagram: bytes) == nil, "another counter")
        #expect(key.reply(to: key.open(epoch: vector.epoch, counter: 1, gate: 1), datagram: bytes) == nil)
        #expect(try self.key("A", id: 2).reply(to: request, datagram: bytes) == nil, "another key id")
        #expect(try self.key("B", id: 1).reply(to: request, datagram: bytes) == nil, "another key")
        #expect(key.reply(to: request, datagram: Array(bytes.dropLast())) == nil)
        #expect(key.reply(to: request, datagram: bytes + [0]) == nil)
        // A request reflected back (signed with c2d) is never a reply.
        #expect(key.reply(to: request, datagram: request.bytes) == nil)
        // On MQTT only the exact lowercase form is a frame.
        #expect(key.reply(to: request, payload: Array(vector.hex.uppercased().utf8)) == nil)
        #expect(key.reply(to: request, payload: Array((vector.hex + "\n").utf8)) == nil)
    }

    @Test func theRetainedAnnouncementGivesTheEpochOnlyWhenGenuine() throws {
        let key = try key("A", id: 1)
        let announcement = try vectors.frame(named: "announcement")
        #expect(key.epoch(fromAnnouncement: Array(announcement.hex.utf8)) == 0x0bad_cafe)
        #expect(try self.key("B", id: 1).epoch(fromAnnouncement: Array(announcement.hex.utf8)) == nil)
        #expect(try self.key("A", id: 2).epoch(fromAnnouncement: Array(announcement.hex.utf8)) == nil)
        var forged = Array(announcement.hex.utf8)
        forged[63] = forged[63] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        #expect(key.epoch(fromAnnouncement: forged) == nil, "a bad tag is ignored")
        // A signed 0x92 for a query (counter 9) is not the announcement, nor is a 0x94.
        let status = key.statusQuery(counter: 0)
        #expect(key.reply(to: status, payload: Array(announcement.hex.utf8))?.kind == .status)
        let v1Accepted = try vectors.frame(named: "status-v1-accepted")
        #expect(key.epoch(fromAnnouncement: Array(v1Accepted.hex.utf8)) == nil)
        #expect(key.epoch(fromAnnouncement: Array(status.hex.utf8)) == nil, "a request is not an announcement")
    }

    @Test func keyTextsAreReadAsTheCoreReadsThem() throws {
        #expect(vectors.keyTexts.count >= 10)
        for record in vectors.keyTexts {
            let parsed = record.text.withUnsafeBufferPointer { V2Key(id: 1, text: $0) }
            guard let expected = record.key else {
                #expect(parsed == nil, "\(hexString(record.text)) must be refused")
                continue
            }
            let reference = try #require(V2Key(id: 1, hex: expected))
            let frame = try #require(parsed, "\(hexString(record.text)) must be read").open(epoch: 1, counter: 1)
            #expect(frame == reference.open(epoch: 1, counter: 1))
        }
    }

    @Test func aKeyNeverPrints() throws {
        let key = try key("A", id: 3)
        let material = try #require(vectors.materials["A"])
        #expect("\(key)" == "key 3")
        #expect(!String(reflecting: key).contains(material.key))
        #expect(!String(reflecting: key).contains(material.c2d))
    }
}
