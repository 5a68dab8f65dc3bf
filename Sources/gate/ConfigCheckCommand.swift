import ArgumentParser
import GateCore
import GateSystem

struct ConfigCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate the configuration and explain what an opening would do.",
        discussion: "Exit 0 when it is valid, 78 when it is missing or invalid (every problem is listed)."
    )

    @OptionGroup var globals: GlobalOptions

    func run() throws {
        let (config, candidate) = try ConfigLoading.load(globals)
        var lines = ["\(candidate.path): valid"]
        if let udp = config.udp {
            lines.append("  udp:  \(udp.host) port \(udp.port), complete cycle within \(udp.timeout) s")
        } else {
            lines.append("  udp:  not configured")
        }
        if let mqtt = config.mqtt {
            let security = mqtt.tls ? "TLS (\(mqtt.caFile ?? "system CA store"))" : "no TLS"
            let user = mqtt.username.map { "user \($0)" } ?? "anonymous"
            lines.append(
                "  mqtt: \(mqtt.host) port \(mqtt.port), \(security), \(user), complete cycle within \(mqtt.timeout) s"
            )
            lines.append("        trigger \(mqtt.triggerTopic), status \(mqtt.statusTopic)")
        } else {
            lines.append("  mqtt: not configured")
        }
        if let button = config.button {
            lines.append(
                "  button: \(button.chip) line \(button.line), active \(button.activeLow ? "low" : "high"), debounce \(button.debounceMilliseconds) ms"
            )
        }
        if let ha = config.homeAssistant {
            let topics = HomeAssistantTopics(ha)
            lines.append(
                "  homeassistant: device \"\(ha.name)\" (node \(ha.nodeID)), discovery under \(ha.discoveryPrefix)/, button on \(topics.command)"
            )
        }
        if let notify = config.notify {
            let which =
                notify.everyOpening
                ? "every opening" : "openings by others (elsewhere, button, homeassistant) and failures"
            let shown = notify.timeoutMilliseconds == 0 ? "until dismissed" : "for \(notify.timeoutMilliseconds) ms"
            lines.append("  notify: desktop notifications (gate daemon, session bus) for \(which), shown \(shown)")
        }
        lines.append("  runtime: reset delay \(config.runtime.resetDelay) s, cooldown \(config.runtime.cooldown) s")
        Terminal.printLine(lines.joined(separator: "\n"))
    }
}
