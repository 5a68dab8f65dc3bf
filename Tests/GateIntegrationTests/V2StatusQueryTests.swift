import Foundation
import GateCore
import GateSystem
import GateTestSupport
import GateV2
import Logging
import Plumbing
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `V2StatusQuery` (PROTOCOL-V2.md, "Status query"): one datagram to a real
/// `esp32-sim --protocol 2` over loopback (and to a fake that lies), the signed answer for
/// that query's counter, and never an open: the trigger log stays empty.
@Suite("Protocol v2's status query over UDP", .serialized)
struct V2StatusQueryTests {
    let vectors: V2Vectors
    let keyA: V2TestKey
    let keyB: V2TestKey

    init() throws {
        vectors = try V2Vectors()
        keyA = try vectors.key("A", id: 1)
        keyB = try vectors.key("B", id: 2)
    }

    private func simulator(_ keys: [V2TestKey], _ extra: [String] = [], protocolVersion: Int = 2) throws -> Simulator {
        var environment: [String: String] = [:]
        for key in keys { environment["ESP32_SIM_KEY\(key.id)"] = key.hex }
        var arguments = ["--hold-ms", "200"] + extra
        if protocolVersion == 2 { arguments = ["--protocol", "2"] + arguments }
        return try Simulator(arguments, environment: environment)
    }

    private func query(
        _ port: UInt16,
        key: V2TestKey,
        budget: Duration = .seconds(5)
    ) throws -> Result<
        V2StatusQuery.Answer, V2StatusQuery.Failure
    > {
        let target = try #require(SocketAddress(literal: "127.0.0.1", port: port))
        let gateKey = try #require(V2Key(id: key.id, hex: key.hex))
        return V2StatusQuery(target: target, key: gateKey, logger: Logger(label: "test")).run(budget: budget)
    }

    @Test func aV2DeviceAnswers92WithItsEpochAndNothingMoves() throws {
        let sim = try simulator([keyA])
        let answer = try query(sim.udpPort, key: keyA).get()
        #expect(answer.status.acceptsV1 == false)
        #expect(answer.status.epoch != 0)
        #expect(answer.ignored == 0)
        // The same epoch the device gives any status query of that key.
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        _ = try probe.send(keyA.statusQuery(counter: 77))
        let reply = try probe.receive(count: 1, within: .seconds(5)).first.flatMap {
            keyA.check(reply: $0.bytes, counter: 77)
        }
        #expect(reply?.epoch == answer.status.epoch)
        #expect(try sim.activations().isEmpty, "a status query never moves the relay")
        #expect(try sim.stop() == .exited(0))
    }

    @Test func aDeviceStillAcceptingV1Answers94() throws {
        let sim = try simulator([keyA], ["--accept-v1"])
        let answer = try query(sim.udpPort, key: keyA).get()
        #expect(answer.status.acceptsV1)
        #expect(try sim.activations().isEmpty)
    }

    @Test func anotherKeyAV1DeviceAndNobodyGetNoAnswerAndNothingMoves() throws {
        let otherKey = try simulator([keyB])
        let wrongKey = try query(otherKey.udpPort, key: keyA, budget: .milliseconds(500))
        #expect(wrongKey == .failure(.silent(ignored: 0, budget: .milliseconds(500))))
        #expect(try otherKey.activations().isEmpty)

        let v1 = try simulator([], protocolVersion: 1)
        let fromV1 = try query(v1.udpPort, key: keyA, budget: .milliseconds(500))
        #expect(fromV1 == .failure(.silent(ignored: 0, budget: .milliseconds(500))))
        #expect(try v1.activations().isEmpty, "a v2 frame never fires a v1 device (byte 0 is 0x02)")

        let port = try freeUDPPort()
        guard case .failure(.unreachable(let why)) = try query(port, key: keyA, budget: .seconds(5)) else {
            Issue.record("an answer from nobody at port \(port)")
            return
        }
        #expect(why.contains("nothing listens"), "\(why)")
    }

    /// A fake ESP32 that answers the one query with a replayed announcement, a v1 byte, a
    /// forged 0x92, the genuine 0x92 for another counter, and only then the genuine answer.
    @Test func onlyTheGenuineAnswerForThisQueryCounts() throws {
        let fake = try FakeESP32()
        let received = LockedBox<[UInt8]>([])
        let serving = Thread {
            guard let (bytes, port) = try? fake.receive(within: .seconds(10)) else { return }
            received.value = bytes
            let counter = bytes.count == 32 ? bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : 0
            let announcement = (try? bytesFromHex(vectors.frame(named: "announcement").hex)) ?? []
            var forged = keyA.frame(type: V2TestKey.status, epoch: 0x1234, counter: counter, signedAsReply: true)
            forged[31] ^= 0x01
            let replies = [
                announcement, [0x01], forged,
                keyA.frame(type: V2TestKey.status, epoch: 0x1234, counter: counter &+ 1, signedAsReply: true),
                keyA.frame(type: V2TestKey.status, epoch: 0x5678, counter: counter, signedAsReply: true),
            ]
            for reply in replies { try? fake.reply(reply, toPort: port) }
        }
        serving.start()
        let answer = try query(fake.port, key: keyA).get()
        #expect(answer.status == V2DeviceStatus(epoch: 0x5678, acceptsV1: false))
        #expect(answer.ignored == 4)
        let query = received.value
        #expect(query.count == 32 && query[0] == 0x02 && query[1] == 0x11, "one status query, never an open")
        #expect(try fake.receive(within: .milliseconds(200)) == nil, "one datagram only")
    }
}

/// A value shared with a thread of the test.
private final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
