/// The validated configuration (docs/CONTRACT.md#configuration), with every default applied.
///
/// Values of this type only come out of `GateConfig.parse(toml:file:)`, which
/// refuses anything that does not validate, so code that holds a `GateConfig`
/// never has to re-check ranges or host names.
public struct GateConfig: Sendable, Equatable {
    public var udp: UDPConfig?
    public var mqtt: MQTTConfig?
    public var button: ButtonConfig?
    public var runtime: RuntimeConfig
    /// docs/CONTRACT.md#home-assistant: only with `[mqtt]`, read by `gate daemon`.
    public var homeAssistant: HomeAssistantConfig?
    /// docs/CONTRACT.md#desktop: desktop notifications, read by `gate daemon`; absent means off.
    public var notify: NotifyConfig?
    /// The protocol spoken with the ESP32 (`[esp32]`); v1 without the table.
    public var esp32: ESP32Config

    public init(
        udp: UDPConfig? = nil,
        mqtt: MQTTConfig? = nil,
        button: ButtonConfig? = nil,
        runtime: RuntimeConfig = RuntimeConfig(),
        homeAssistant: HomeAssistantConfig? = nil,
        notify: NotifyConfig? = nil,
        esp32: ESP32Config = ESP32Config()
    ) {
        self.udp = udp
        self.mqtt = mqtt
        self.button = button
        self.runtime = runtime
        self.homeAssistant = homeAssistant
        self.notify = notify
        self.esp32 = esp32
    }
}
