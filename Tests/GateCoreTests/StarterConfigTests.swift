import GateCore
import Testing

@Suite("gate config init's starter text")
struct StarterConfigTests {
    @Test("Every combination of --udp and --mqtt validates, with only the tables asked for switched on")
    func combinations() throws {
        let cases: [(udp: String?, mqtt: String?, udpHost: String?, mqttHost: String?)] = [
            (nil, nil, StarterConfig.placeholderHost, nil),
            ("192.168.1.50", nil, "192.168.1.50", nil),
            (nil, "broker.lan", nil, "broker.lan"),
            ("esp32.lan", "fd00::1", "esp32.lan", "fd00::1"),
        ]
        for item in cases {
            let text = StarterConfig.text(udpHost: item.udp, mqttHost: item.mqtt)
            let config = try GateConfig.parse(toml: text, file: "starter.toml")
            #expect(config.udp?.host == item.udpHost, "\(text)")
            #expect(config.mqtt?.host == item.mqttHost, "\(text)")
            #expect(config.mqtt?.username == nil && config.mqtt?.tls != true, "a starter broker is anonymous, plain")
            #expect(config.button == nil && config.homeAssistant == nil && config.notify == nil)
            #expect(config.runtime == RuntimeConfig(), "the commented defaults are the defaults")
        }
    }

    @Test("Hosts are written as TOML strings: a quote cannot end the string (and then fails validation)")
    func quoting() {
        let text = StarterConfig.text(udpHost: "a\"b", mqttHost: nil)
        #expect(text.contains("host = \"a\\\"b\"\n"))
        #expect(throws: ConfigError.self) { try GateConfig.parse(toml: text, file: "starter.toml") }
    }
}
