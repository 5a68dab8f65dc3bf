import GateCore

/// Protocol v2's MQTT copy of the frame, published through the link; the signed replies
/// come through the link's reply reader (`MQTTLink.attachReplies`).
struct V2LinkAdapter: GateAdapter {
    let kind = AdapterKind.mqtt
    let link: MQTTLink
    let request: (topic: String, payload: [UInt8])

    func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        if let cancel = link.attempt(ticket, request: request) { return cancel }
        ticket.report(.unreachable("the MQTT link went down before the frame was published"))
        ticket.finish()
        return AttemptCancel {}
    }
}
