import ArgumentParser
import Glibc

/// Where and how the MQTT side reaches its broker: the `--mqtt-*` options plus the password,
/// which comes from the environment only (an argument would show in `ps` to every user).
struct MQTTSettings: Sendable {
    static let passwordVariable = "ESP32_SIM_MQTT_PASSWORD"
    static let defaultTriggerTopic = "iot/house/gate/esp32/trigger"
    static let defaultStatusTopic = "iot/house/gate/esp32/status"

    var host: String
    var port: Int
    var username: String?
    var password: [UInt8]?
    var caFile: String?
    var triggerTopic: String
    var statusTopic: String

    /// Protocol 2's requests (`<trigger>/v2`), replies (`<status>/v2`) and retained epoch
    /// announcements (`<status>/v2/epoch/<key_id>`, the id in decimal).
    var triggerTopicV2: String { triggerTopic + "/v2" }
    var repliesTopic: String { statusTopic + "/v2" }
    func epochTopic(keyID: UInt8) -> String { "\(statusTopic)/v2/epoch/\(keyID)" }

    /// `host:port` (`[::1]:1883` for an IPv6 literal), for log and error lines.
    var broker: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The password variable's bytes; nil when it is not set (set but empty is an empty password).
    static func passwordFromEnvironment() -> [UInt8]? {
        guard let value = getenv(passwordVariable) else { return nil }
        return Array(UnsafeRawBufferPointer(start: value, count: strlen(value)))
    }

    /// Refuses topics the device could not use: wildcards cannot be published to, and
    /// a device subscribed to its own status topic would trigger itself forever.
    static func validateTopics(trigger: String, status: String) throws(ValidationError) {
        for (option, topic) in [("--mqtt-trigger-topic", trigger), ("--mqtt-status-topic", status)] {
            guard !topic.isEmpty, !topic.contains("+"), !topic.contains("#"), !topic.utf8.contains(0) else {
                throw ValidationError(
                    "\(option) \(topic.debugDescription): must be a non-empty topic without the wildcards + and #"
                )
            }
        }
        guard trigger != status else {
            throw ValidationError(
                "--mqtt-trigger-topic and --mqtt-status-topic are both \(trigger): the device would trigger itself"
            )
        }
    }
}

extension SimulatorCommand {
    /// The MQTT settings, or nil when MQTT is not enabled (no `--mqtt-host`) or switched off
    /// by `--fault mqtt-off`. Call after `validate()`.
    func mqttSettings(faults: Faults) -> MQTTSettings? {
        guard let mqttHost, !faults.isOff(.mqtt) else { return nil }
        return MQTTSettings(
            host: mqttHost,
            port: mqttPort ?? (mqttTLSCA == nil ? 1883 : 8883),
            username: mqttUsername,
            password: MQTTSettings.passwordFromEnvironment(),
            caFile: mqttTLSCA,
            triggerTopic: mqttTriggerTopic ?? MQTTSettings.defaultTriggerTopic,
            statusTopic: mqttStatusTopic ?? MQTTSettings.defaultStatusTopic
        )
    }

    /// The checks of `validate()` that concern MQTT.
    func validateMQTT(faults: Faults) throws(ValidationError) {
        guard let mqttHost else {
            let given: [(String, Bool)] = [
                ("--mqtt-port", mqttPort != nil), ("--mqtt-username", mqttUsername != nil),
                ("--mqtt-tls-ca", mqttTLSCA != nil), ("--mqtt-trigger-topic", mqttTriggerTopic != nil),
                ("--mqtt-status-topic", mqttStatusTopic != nil),
            ]
            if let option = given.first(where: \.1)?.0 {
                throw ValidationError("\(option) needs --mqtt-host: MQTT is enabled by naming the broker")
            }
            let mqttFaults = fault.filter { $0.transport == .mqtt && $0.mode != .mqttOff }
            if let setting = mqttFaults.first {
                throw ValidationError("--fault \(setting.description) needs --mqtt-host: MQTT is not enabled")
            }
            if faults.isOff(.udp) {
                throw ValidationError("--fault udp-off without --mqtt-host leaves nothing to simulate")
            }
            return
        }
        guard !mqttHost.isEmpty, !mqttHost.utf8.contains(0) else {
            throw ValidationError("--mqtt-host: must name the broker, e.g. 127.0.0.1 or broker.lan")
        }
        if let mqttPort, !(1...65535).contains(mqttPort) {
            throw ValidationError("--mqtt-port \(mqttPort): must be 1…65535")
        }
        if let mqttUsername, mqttUsername.isEmpty || mqttUsername.utf8.contains(0) {
            throw ValidationError("--mqtt-username: must not be empty")
        }
        if faults.isOff(.udp) && faults.isOff(.mqtt) {
            throw ValidationError("--fault udp-off with --fault mqtt-off leaves nothing to simulate")
        }
        try MQTTSettings.validateTopics(
            trigger: mqttTriggerTopic ?? MQTTSettings.defaultTriggerTopic,
            status: mqttStatusTopic ?? MQTTSettings.defaultStatusTopic
        )
    }
}
