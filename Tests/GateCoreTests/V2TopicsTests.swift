import GateCore
import Testing

@Suite("Protocol v2: topics and status replies")
struct V2TopicsTests {
    let topics = V2Topics(MQTTConfig(host: "broker", triggerTopic: "iot/gate/trigger", statusTopic: "iot/gate/status"))

    @Test func theV2TopicsSitUnderTheV1Ones() {
        #expect(topics.requests == "iot/gate/trigger/v2")
        #expect(topics.replies == "iot/gate/status/v2")
        #expect(topics.epoch(keyID: 1) == "iot/gate/status/v2/epoch/1")
        #expect(topics.epoch(keyID: 255) == "iot/gate/status/v2/epoch/255")
    }

    @Test func anEpochTopicNamesItsKeyInTheESP32sDecimalOnly() {
        for id in [UInt8(1), 9, 10, 99, 100, 255] {
            #expect(topics.keyID(ofEpochTopic: topics.epoch(keyID: id)) == id)
        }
        let refused = [
            "iot/gate/status/v2/epoch/0", "iot/gate/status/v2/epoch/01", "iot/gate/status/v2/epoch/256",
            "iot/gate/status/v2/epoch/+1", "iot/gate/status/v2/epoch/1/x", "iot/gate/status/v2/epoch/",
            "iot/gate/status/v2/epoch/1000", "iot/gate/status/v2", "iot/gate/status", "other/v2/epoch/1",
            "iot/gate/status/v2/epoch/ 1",
        ]
        for topic in refused { #expect(topics.keyID(ofEpochTopic: topic) == nil, "\(topic)") }
    }

    @Test func onlyStatusRepliesSayWhatTheDeviceIs() {
        #expect(V2DeviceStatus(kind: .status, epoch: 7) == V2DeviceStatus(epoch: 7, acceptsV1: false))
        #expect(V2DeviceStatus(kind: .statusV1Accepted, epoch: 7) == V2DeviceStatus(epoch: 7, acceptsV1: true))
        for kind in [V2ReplyKind.relayOn, .relayOff, .busy, .staleEpoch] {
            #expect(V2DeviceStatus(kind: kind, epoch: 7) == nil, "\(kind)")
        }
        #expect(V2ReplyKind.staleEpoch.description == "0x9E" && V2ReplyKind.status.description == "0x92")
    }
}
