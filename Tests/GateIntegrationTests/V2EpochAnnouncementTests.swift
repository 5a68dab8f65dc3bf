import Foundation
import GateCore
import GateSystem
import GateTestSupport
import GateV2
import Logging
import Plumbing
import Testing

/// The retained epoch announcement (PROTOCOL-V2.md, "Transports") as gate reads it: a real
/// `esp32-sim --protocol 2` publishes one per key on a real mosquitto, and only this key's,
/// genuinely signed, gives the epoch (the one a UDP status query finds too).
@Suite("Protocol v2's retained epoch announcement", .serialized)
struct V2EpochAnnouncementTests {
    static let topics = V2Topics(
        triggerTopic: MQTTConfig.defaultTriggerTopic,
        statusTopic: MQTTConfig.defaultStatusTopic
    )

    @Test func onlyThisKeysGenuineAnnouncementGivesTheEpoch() throws {
        let vectors = try V2Vectors()
        let keyA = try vectors.key("A", id: 1)
        let keyB = try vectors.key("B", id: 2)
        let broker = try MosquittoBroker(.plain)
        let sim = try Simulator(
            ["--protocol", "2", "--mqtt-host", broker.host, "--mqtt-port", String(broker.port)],
            environment: ["ESP32_SIM_KEY1": keyA.hex, "ESP32_SIM_KEY2": keyB.hex]
        )
        let recorder = try MQTTRecorder(broker, topic: Self.topics.epochPrefix + "+")
        recorder.waitForMessages(topic: Self.topics.epoch(keyID: 1), count: 1)
        recorder.waitForMessages(topic: Self.topics.epoch(keyID: 2), count: 1)
        let messages = recorder.received
        #expect(messages.count == 2 && messages.allSatisfy(\.retained), "\(messages)")

        let key = try #require(V2Key(id: 1, hex: keyA.hex))
        let epochs = messages.compactMap {
            key.epoch(fromAnnouncementOn: $0.topic, payload: $0.payload, topics: Self.topics)
        }
        let target = try #require(SocketAddress(literal: sim.udpHost, port: sim.udpPort))
        let status = try V2StatusQuery(target: target, key: key, logger: Logger(label: "test")).run(budget: .seconds(5))
            .get().status
        #expect(epochs == [status.epoch], "key 2's announcement is not key 1's")

        // Key 1's announcement moved to key 2's topic, or key 2's to key 1's: not taken.
        let announcementA = try #require(messages.first { $0.topic == Self.topics.epoch(keyID: 1) })
        let announcementB = try #require(messages.first { $0.topic == Self.topics.epoch(keyID: 2) })
        #expect(
            key.epoch(
                fromAnnouncementOn: Self.topics.epoch(keyID: 2),
                payload: announcementA.payload,
                topics: Self.topics
            ) == nil
        )
        #expect(
            key.epoch(
                fromAnnouncementOn: Self.topics.epoch(keyID: 1),
                payload: announcementB.payload,
                topics: Self.topics
            ) == nil
        )

        // A forged retained announcement (a bad tag) replaces the real one on an open broker:
        // gate ignores it, and learns the epoch otherwise (a status query).
        var forged = announcementA.payload
        forged[63] = forged[63] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
        try broker.publish(
            topic: Self.topics.epoch(keyID: 1),
            payload: String(decoding: forged, as: UTF8.self),
            retained: true
        )
        let late = try MQTTRecorder(broker, topic: Self.topics.epoch(keyID: 1))
        late.waitForMessages(topic: Self.topics.epoch(keyID: 1), count: 1)
        let replaced = try #require(late.received(topic: Self.topics.epoch(keyID: 1)).first)
        #expect(replaced.payload == forged)
        #expect(key.epoch(fromAnnouncementOn: replaced.topic, payload: replaced.payload, topics: Self.topics) == nil)
        #expect(try sim.activations().isEmpty)
    }
}
