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

/// The protocol gate speaks with the ESP32 (docs/CONTRACT.md#configuration, PROTOCOL-V2.md).
/// v2's key is a credential (`esp32-key`), never a key of this table.
public struct ESP32Config: Sendable, Equatable {
    public enum ProtocolVersion: Int, Sendable, Equatable {
        /// The plain `0x01` and `1`/`0`: anyone on the LAN or the broker can open.
        case v1 = 1
        /// Signed 32-byte frames with a counter and the ESP32's epoch.
        case v2 = 2
    }

    public static let defaultKeyID: UInt8 = 1

    public var protocolVersion: ProtocolVersion
    /// Which of the ESP32's provisioned keys signs this client's frames (1–255).
    public var keyID: UInt8

    public init(protocolVersion: ProtocolVersion = .v1, keyID: UInt8 = ESP32Config.defaultKeyID) {
        self.protocolVersion = protocolVersion
        self.keyID = keyID
    }
}

/// Desktop notifications through the freedesktop notification service (docs/CONTRACT.md#desktop).
public struct NotifyConfig: Sendable, Equatable {
    public static let defaultTimeoutMilliseconds = 10_000
    /// An hour: a notification server takes an `int32` of milliseconds, and a gate
    /// notice older than that tells nobody anything.
    public static let timeoutRange = 0...3_600_000

    /// Also the openings of this desktop's own CLI and widgets; otherwise only openings
    /// by others (`elsewhere`, `button`, `homeassistant`) and failures.
    public var everyOpening: Bool
    /// How long the server shows a notification; 0: until it is dismissed.
    public var timeoutMilliseconds: Int

    public init(everyOpening: Bool = false, timeoutMilliseconds: Int = NotifyConfig.defaultTimeoutMilliseconds) {
        self.everyOpening = everyOpening
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}

/// The gate as one Home Assistant device over MQTT discovery (docs/CONTRACT.md#home-assistant).
public struct HomeAssistantConfig: Sendable, Equatable {
    public static let defaultDiscoveryPrefix = "homeassistant"
    public static let defaultNodeID = "garden_gate"
    public static let defaultName = "Garden gate"

    /// HA's discovery prefix (`homeassistant` unless HA was told otherwise).
    public var discoveryPrefix: String
    /// `[A-Za-z0-9_-]+`: the device's and its entities' unique_id stem, and the topics' node.
    public var nodeID: String
    /// The device's name in HA.
    public var name: String

    public init(
        discoveryPrefix: String = HomeAssistantConfig.defaultDiscoveryPrefix,
        nodeID: String = HomeAssistantConfig.defaultNodeID,
        name: String = HomeAssistantConfig.defaultName
    ) {
        self.discoveryPrefix = discoveryPrefix
        self.nodeID = nodeID
        self.name = name
    }
}

/// Where the ESP32 listens for UDP triggers.
public struct UDPConfig: Sendable, Equatable {
    public static let defaultPort = 8080
    public static let defaultTimeout: Double = 2.0
    /// The largest `udp.timeout` validation accepts.
    public static let maximumTimeout = 60

    /// An IPv4 or IPv6 literal (without brackets) or a host name.
    public var host: String
    public var port: Int
    /// Seconds for the complete cycle (`1` then `0`).
    public var timeout: Double

    public init(host: String, port: Int = UDPConfig.defaultPort, timeout: Double = UDPConfig.defaultTimeout) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }
}

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

/// The push button read by `gate daemon`.
public struct ButtonConfig: Sendable, Equatable {
    public static let defaultChip = "gpiochip0"
    public static let defaultDebounceMilliseconds = 50

    /// A chip name, number, path or label, as `gpiod_chip_open_lookup` takes it.
    public var chip: String
    public var line: Int
    public var activeLow: Bool
    public var debounceMilliseconds: Int

    public init(
        chip: String = ButtonConfig.defaultChip,
        line: Int,
        activeLow: Bool = true,
        debounceMilliseconds: Int = ButtonConfig.defaultDebounceMilliseconds
    ) {
        self.chip = chip
        self.line = line
        self.activeLow = activeLow
        self.debounceMilliseconds = debounceMilliseconds
    }
}

/// Timing rules that apply whatever the adapter.
public struct RuntimeConfig: Sendable, Equatable {
    public static let defaultResetDelay: Double = 3.0
    public static let defaultCooldown: Double = 2.0

    /// Seconds spent in `timeout` or `error` before `ready` again.
    public var resetDelay: Double
    /// Seconds after a cycle during which a new opening is refused.
    public var cooldown: Double

    public init(resetDelay: Double = RuntimeConfig.defaultResetDelay, cooldown: Double = RuntimeConfig.defaultCooldown)
    {
        self.resetDelay = resetDelay
        self.cooldown = cooldown
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
