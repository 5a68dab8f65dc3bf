/// The MQTT broker used as the fallback.
public struct MQTTConfig: Sendable, Equatable {
    public static let defaultPlainPort = 1883
    public static let defaultTLSPort = 8883
    public static let defaultTimeout: Double = 5.0
    /// The largest `mqtt.timeout` validation accepts.
    public static let maximumTimeout = 60
    public static let defaultClientIDPrefix = "gate-"
    public static let defaultTriggerTopic = "iot/house/gate/esp32/trigger"
    public static let defaultStatusTopic = "iot/house/gate/esp32/status"

    public var host: String
    public var port: Int
    public var tls: Bool
    /// A PEM bundle of trusted CAs; `nil` means the system store.
    public var caFile: String?
    public var username: String?
    public var clientIDPrefix: String
    public var triggerTopic: String
    public var statusTopic: String
    /// Seconds for the complete cycle, connecting included.
    public var timeout: Double

    public init(
        host: String,
        port: Int? = nil,
        tls: Bool = false,
        caFile: String? = nil,
        username: String? = nil,
        clientIDPrefix: String = MQTTConfig.defaultClientIDPrefix,
        triggerTopic: String = MQTTConfig.defaultTriggerTopic,
        statusTopic: String = MQTTConfig.defaultStatusTopic,
        timeout: Double = MQTTConfig.defaultTimeout
    ) {
        self.host = host
        self.port = port ?? (tls ? MQTTConfig.defaultTLSPort : MQTTConfig.defaultPlainPort)
        self.tls = tls
        self.caFile = caFile
        self.username = username
        self.clientIDPrefix = clientIDPrefix
        self.triggerTopic = triggerTopic
        self.statusTopic = statusTopic
        self.timeout = timeout
    }
}

extension MQTTConfig {
    /// Whether a link made for `other` serves this configuration as well: every key
    /// but `timeout`, which only openings read (a reload of it never replaces the link,
    /// docs/CONTRACT.md#gate-daemon).
    public func sameLink(as other: MQTTConfig) -> Bool {
        var other = other
        other.timeout = timeout
        return self == other
    }
}
