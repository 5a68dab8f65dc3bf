import GateCore
import Logging

/// The adapters a real opening uses, with where their secrets come from.
public enum StandardAdapters {
    /// The password lookup chain of SPEC §5, in order.
    public static func credentials(environment: [String: String] = ProcessEnvironment.current()) -> CredentialLookup {
        CredentialLookup(sources: [
            SystemdCredentials(environment: environment),
            SecretServiceSource(environment: environment),
        ])
    }

    /// Builds the MQTT adapter for `Opener`; UDP is built by the opener itself.
    public static func factory(credentials: CredentialLookup, logger: Logger) -> Opener.AdapterFactory {
        { kind, config in
            switch kind {
            case .udp:
                return nil
            case .mqtt:
                return config.mqtt.map { MQTTAdapter(config: $0, credentials: credentials, logger: logger) }
            }
        }
    }
}
