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
    /// - Parameter early: an exchange `gate open` began before the opening (see
    ///   `EarlyMQTTExchange`); used when it was handed the same broker.
    public static func factory(credentials: CredentialLookup, logger: Logger, early: EarlyMQTTExchange? = nil) -> Opener.AdapterFactory {
        { kind, config in
            switch kind {
            case .udp:
                return nil
            case .mqtt:
                return config.mqtt.map { mqtt -> any GateAdapter in
                    let cold = MQTTAdapter(config: mqtt, credentials: credentials, logger: logger)
                    guard let early else { return cold }
                    return EarlyMQTTAdapter(early: early, cold: cold)
                }
            }
        }
    }
}

/// MQTT through the daemon's warm link when it is up; otherwise a connection of
/// its own, as `gate open` makes (a broker back before the link's next retry
/// still carries the opening).
public struct WarmMQTTAdapter: GateAdapter {
    public let kind = AdapterKind.mqtt
    let link: MQTTLink?
    let cold: MQTTAdapter
    let logger: Logger

    public init(link: MQTTLink?, cold: MQTTAdapter, logger: Logger) {
        self.link = link
        self.cold = cold
        self.logger = logger
    }

    public func attempt(deadline: MonotonicInstant) -> AdapterAttempt {
        // A link made for another configuration (a reload is under way) is not used.
        if let link, link.config == cold.config, let attempt = link.attempt(deadline: deadline) {
            return attempt
        }
        logger.info("MQTT link not up; connecting afresh for this opening", metadata: ["adapter": "mqtt"])
        return cold.attempt(deadline: deadline)
    }
}

extension StandardAdapters {
    /// The daemon's factory: MQTT prefers the warm link that `link` returns.
    public static func factory(
        credentials: CredentialLookup, logger: Logger, link: @escaping @Sendable () -> MQTTLink?
    ) -> Opener.AdapterFactory {
        { kind, config in
            switch kind {
            case .udp:
                return nil
            case .mqtt:
                return config.mqtt.map { mqtt in
                    WarmMQTTAdapter(link: link(), cold: MQTTAdapter(config: mqtt, credentials: credentials, logger: logger), logger: logger)
                }
            }
        }
    }
}
