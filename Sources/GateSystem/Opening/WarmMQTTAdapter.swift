import GateCore
import Logging
import Plumbing

/// MQTT through the daemon's warm link when it is up; otherwise a connection of
/// its own, as `gate open` makes (a broker back before the link's next retry
/// still carries the opening).
struct WarmMQTTAdapter: GateAdapter {
    let kind = AdapterKind.mqtt
    let link: MQTTLink
    let cold: MQTTAdapter
    let logger: Logger

    func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        if let cancel = link.attempt(ticket) {
            return cancel
        }
        logger.info("MQTT link not up; connecting afresh for this opening", metadata: ["adapter": "mqtt"])
        return cold.attempt(ticket)
    }
}
