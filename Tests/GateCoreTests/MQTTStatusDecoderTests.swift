import Testing

@testable import GateCore

@Suite("MQTT status payloads")
struct MQTTStatusDecoderTests {
    private let topic = "iot/house/gate/esp32/status"

    @Test(
        "1 and 0, with surrounding white space trimmed",
        arguments: [
            ("1", RelayState.activated), ("0", .released), (" 1\n", .activated), ("\t0\r\n", .released),
        ]
    )
    func relay(payload: String, state: RelayState) {
        #expect(MQTTStatusDecoder.event(for: Array(payload.utf8), topic: topic) == .relay(state))
    }

    @Test(
        "Anything else is invalid and says what came",
        arguments: ["", "x", "10", "01", "true", "1 0", "on", "\u{0}"]
    )
    func invalid(payload: String) {
        guard case .invalid(let answer) = MQTTStatusDecoder.event(for: Array(payload.utf8), topic: topic) else {
            Issue.record("\(payload.debugDescription) was accepted")
            return
        }
        #expect(answer.description.contains(topic))
    }

    @Test("Long or binary payloads are shown short, as hex")
    func binary() {
        guard
            case .invalid(let answer) = MQTTStatusDecoder.event(for: [UInt8](repeating: 0xff, count: 100), topic: topic)
        else {
            Issue.record("binary payload accepted")
            return
        }
        let words = answer.description
        #expect(words.contains("100 bytes (ff ff"))
        #expect(words.count < 200)
    }
}
