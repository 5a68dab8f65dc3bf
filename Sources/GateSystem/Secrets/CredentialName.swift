/// The secrets gate looks up, each by one name: the systemd credential's file name in
/// `$CREDENTIALS_DIRECTORY` and the Secret Service item's `account` (docs/CONTRACT.md#secrets).
/// One lookup path (`CredentialLookup`) serves them all.
public enum CredentialName: String, Sendable, CaseIterable {
    /// The broker's password for `mqtt.username`.
    case mqttPassword = "mqtt-password"
    /// Protocol v2's key (PROTOCOL-V2.md): 64 hex digits.
    case esp32Key = "esp32-key"

    /// For sentences: "the MQTT password".
    public var title: String {
        switch self {
        case .mqttPassword: "the MQTT password"
        case .esp32Key: "the ESP32 key"
        }
    }

    /// The Secret Service item's label, as a keyring shows it.
    public var label: String {
        switch self {
        case .mqttPassword: "gate MQTT password"
        case .esp32Key: "gate ESP32 key (protocol v2)"
        }
    }

    /// The command that stores one in the Secret Service.
    public var storeCommand: String {
        switch self {
        case .mqttPassword: "gate secret set mqtt-password"
        case .esp32Key: "gate key new"
        }
    }

    /// One short sentence for a lookup that found nothing: how to provide it.
    var missingAdvice: String {
        let systemd =
            "give the service the systemd credential `\(rawValue)` (LoadCredentialEncrypted=\(rawValue)); "
            + "-v shows where gate looked"
        switch self {
        case .mqttPassword: return "no MQTT password found: store one with `\(storeCommand)`, or \(systemd)"
        case .esp32Key: return "no ESP32 key found: draw one with `\(storeCommand)`, or \(systemd)"
        }
    }
}
