import ArgumentParser
import GateSystem

/// The secrets gate knows (`CredentialName`): the MQTT password, and protocol v2's key
/// (made by `gate key new`, which `set` leaves to it).
enum SecretAccount: String, CaseIterable, ExpressibleByArgument {
    case mqttPassword = "mqtt-password"
    case esp32Key = "esp32-key"

    var credential: CredentialName {
        switch self {
        case .mqttPassword: .mqttPassword
        case .esp32Key: .esp32Key
        }
    }

    /// For messages: "the MQTT password".
    var title: String { credential.title }

    /// What the terminal prompt asks for.
    var prompt: String {
        switch self {
        case .mqttPassword: "MQTT password: "
        case .esp32Key: "ESP32 key: "
        }
    }

    var label: String { credential.label }
}
