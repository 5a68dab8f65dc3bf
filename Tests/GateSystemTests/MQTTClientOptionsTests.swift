import GateCore
import GateTestSupport
import Testing

@testable import GateSystem

#if canImport(Glibc)
import Glibc
#endif

@Suite("How gate's MQTT clients talk to the broker")
struct MQTTClientOptionsTests {
    @Test(
        "TCP_NODELAY on the broker connection: Nagle's algorithm would hold CONNECT behind the TLS handshake's last ack, one round trip per cold opening"
    )
    func noDelay() throws {
        let broker = try MosquittoBroker()
        let config = MQTTConfig(host: "127.0.0.1", port: Int(broker.port))
        let client = try MQTTStatusTopic.makeClient(config: config, password: nil) { _ in }
        try client.connect(host: "127.0.0.1", port: Int32(broker.port))
        defer { client.disconnect() }
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(client.socket, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0)
        #expect(value == 1)
    }
}
