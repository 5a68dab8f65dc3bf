import ArgumentParser
import GateCore
import GateHomeAssistant
import GateSystem

struct HomeAssistantRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Delete the gate's device from Home Assistant (empty retained discovery configs).",
        discussion: """
            Publishes an empty retained message on each of the device's discovery config \
            topics (button, binary_sensor, sensor), its availability and its sensor topics, \
            through the broker of [mqtt], as the configured user. Home Assistant then deletes \
            the device and its entities. The topics come from [homeassistant] (its defaults \
            when the table is absent, or --node-id / --discovery-prefix).

            A running `gate daemon` whose configuration still has [homeassistant] announces \
            the device again when it reconnects or Home Assistant restarts: remove the table \
            and reload the daemon (`systemctl reload gate`) to keep it away; the daemon then \
            deletes the device itself.

            Exit codes: 0 removed (the broker acknowledged every message); 69 the broker \
            cannot be reached or did not acknowledge; 78 configuration missing or invalid, \
            no [mqtt], or the password is missing or refused.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Option(help: "The node_id of the device to remove (default: [homeassistant]'s).")
    var nodeID: String?

    @Option(help: "Home Assistant's discovery prefix (default: [homeassistant]'s).")
    var discoveryPrefix: String?

    func run() throws {
        let logger = globals.makeLogger()
        let (config, candidate) = try ConfigLoading.load(globals)
        guard let mqtt = config.mqtt else {
            throw fail(
                "\(candidate.path) has no [mqtt] table: Home Assistant is reached through the MQTT broker",
                ExitStatus.configuration
            )
        }
        var ha = config.homeAssistant ?? HomeAssistantConfig()
        if let nodeID {
            guard HomeAssistantConfig.isValidNodeID(nodeID) else {
                throw ValidationError("--node-id takes 1–64 characters of A–Z, a–z, 0–9, `_` and `-`")
            }
            ha.nodeID = nodeID
        }
        if let discoveryPrefix {
            guard !discoveryPrefix.isEmpty, !discoveryPrefix.contains("+"), !discoveryPrefix.contains("#") else {
                throw ValidationError("--discovery-prefix must be a topic without wildcards")
            }
            ha.discoveryPrefix = discoveryPrefix
        }
        var password: Secret?
        if mqtt.username != nil {
            switch AdapterFactory.credentials().mqttPassword() {
            case .success(let secret): password = secret
            case .failure(let failure): throw fail(failure.message, ExitStatus.configuration)
            }
        }
        let topics = HomeAssistantTopics(ha)
        let removal = HomeAssistantDiscovery.removal(topics)
        let outcome = MQTTOneShot.run(
            mqtt,
            password: password,
            publish: removal,
            timeout: .seconds(fromConfig: mqtt.timeout)
        )
        password = nil
        switch outcome {
        case .success:
            logger.info(
                "Home Assistant device removed",
                metadata: ["node_id": "\(ha.nodeID)", "prefix": "\(ha.discoveryPrefix)"]
            )
            Terminal.printLine(
                "Removed the Home Assistant device \(ha.nodeID): empty retained messages on \(topics.discoveryConfigs.joined(separator: ", ")) and the device's own topics."
            )
            if config.homeAssistant != nil {
                Terminal.printLine(
                    "Note: [homeassistant] is still in \(candidate.path); a running gate daemon announces the device again when it reconnects or Home Assistant restarts. Remove the table and reload the daemon to keep it away."
                )
            }
        case .failure(let failure):
            let refused = if case .refused = failure.kind { true } else { false }
            throw fail(failure.description, refused ? ExitStatus.configuration : ExitStatus.unavailable)
        }
    }

    private func fail(_ message: String, _ status: Int32) -> ExitCode {
        Terminal.printError("gate homeassistant remove: \(message)")
        return ExitCode(status)
    }
}
