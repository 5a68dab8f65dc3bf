import GateCore

/// The verdicts on the MQTT broker: a TCP connection, then the login.
extension DoctorVerdict {
    /// `host:port`, with brackets around an IPv6 literal.
    public static func endpoint(_ mqtt: MQTTConfig) -> String {
        mqtt.host.contains(":") ? "[\(mqtt.host)]:\(mqtt.port)" : "\(mqtt.host):\(mqtt.port)"
    }

    public static func tcp(_ facts: TCPFacts, mqtt: MQTTConfig, file: String) -> DoctorFinding {
        let broker = endpoint(mqtt)
        switch facts {
        case .connected(let took):
            return .ok(.mqttTCP, "TCP connection to the MQTT broker at \(broker) in \(took.milliseconds) ms")
        case .failed(let words):
            return .unavailable(
                .mqttTCP,
                "cannot reach the MQTT broker at \(broker): \(words)",
                fix:
                    "start the broker (on its host: `systemctl status mosquitto`), or correct mqtt.host / mqtt.port in \(file)"
            )
        case .noAnswer:
            return .unavailable(
                .mqttTCP,
                "no TCP answer from the MQTT broker at \(broker) within \(mqtt.timeout) s (mqtt.timeout)",
                fix:
                    "the host is down or a firewall drops port \(mqtt.port): check mqtt.host / mqtt.port in \(file) and the network"
            )
        }
    }

    public static func broker(_ facts: BrokerFacts, mqtt: MQTTConfig, file: String) -> DoctorFinding {
        let broker = endpoint(mqtt)
        let login = mqtt.username.map { "the login of user \($0)" } ?? "an anonymous login"
        switch facts {
        case .accepted(let took):
            let tls = mqtt.tls ? "TLS handshake verified against \(mqtt.caFile ?? "the system's CA store") and " : ""
            return .ok(
                .mqttConnect,
                "\(tls)\(login) accepted by \(broker) in \(took.milliseconds) ms; disconnected at once, nothing published"
            )
        case .refused(let code, let words):
            return refusal(code, "the MQTT broker at \(broker) refused \(login): \(words)", mqtt: mqtt, file: file)
        case .tlsFailed(let words):
            let trust =
                mqtt.caFile.map { "mqtt.ca_file (\($0)) holds" } ?? "the system's CA store (or an mqtt.ca_file) holds"
            return .unavailable(
                .mqttConnect,
                "TLS handshake with the MQTT broker at \(broker) failed: \(words)",
                fix: "check in \(file) that \(trust) the CA that signed the broker's certificate and that mqtt.host "
                    + "is a name or address in that certificate; if port \(mqtt.port) is not a TLS port, use the broker's "
                    + "TLS port (usually 8883) or set mqtt.tls = false"
            )
        case .connectFailed(let words):
            return .unavailable(
                .mqttConnect,
                "cannot reach the MQTT broker at \(broker): \(words)",
                fix: "start the broker, or correct mqtt.host / mqtt.port in \(file)"
            )
        case .closed(let words):
            let fix =
                mqtt.tls
                ? "the broker dropped the connection: its log says why (on its host: `journalctl -u mosquitto`)"
                : "if port \(mqtt.port) is a TLS port, set mqtt.tls = true (and mqtt.ca_file) in \(file); otherwise the broker's log says why"
            return .unavailable(
                .mqttConnect,
                "the MQTT broker at \(broker) closed the connection before answering \(login) (\(words))",
                fix: fix
            )
        case .noAnswer:
            let what = mqtt.tls ? "no TLS handshake or CONNACK" : "no CONNACK"
            return .unavailable(
                .mqttConnect,
                "\(what) from \(broker) within \(mqtt.timeout) s (mqtt.timeout): the port accepts TCP but does not answer as an MQTT broker",
                fix: "check mqtt.port and mqtt.tls in \(file) against the broker's listeners"
            )
        case .setupFailed(let words):
            return .unavailable(
                .mqttConnect,
                "cannot prepare an MQTT client: \(words)",
                fix: "sudo apt install libmosquitto1"
            )
        }
    }

    /// A CONNACK refusal: the login (a configuration problem), the client id, or the broker itself.
    private static func refusal(_ code: Int32, _ detail: String, mqtt: MQTTConfig, file: String) -> DoctorFinding {
        if code == BrokerFacts.badCredentials || code == BrokerFacts.notAuthorised {
            let fix =
                if let username = mqtt.username {
                    "store the right password of \(username): `gate secret set mqtt-password` (desktop session), for the service "
                        + "`systemd-creds encrypt --name=mqtt-password - /etc/credstore.encrypted/mqtt-password` (\(installedDocs)/credentials.md); "
                        + "or correct mqtt.username in \(file)"
                } else {
                    "the broker wants a login: set mqtt.username in \(file) and store its password with `gate secret set mqtt-password`"
                }
            return .misconfigured(.mqttConnect, detail, fix: fix)
        }
        if code == BrokerFacts.identifierRejected {
            return .misconfigured(
                .mqttConnect,
                detail,
                fix: "the broker refuses the client id: shorten mqtt.client_id_prefix in \(file)"
            )
        }
        return .unavailable(
            .mqttConnect,
            detail,
            fix:
                "check that mqtt.host / mqtt.port in \(file) name an MQTT 3.1.1 broker that is accepting clients (its log says more)"
        )
    }
}
