import GateCore

/// Why the link could not connect: the event an opening waiting for it reports, and
/// its words for the log.
struct LinkFailure: Error, CustomStringConvertible {
    let event: AdapterEvent

    init(_ event: AdapterEvent) {
        self.event = event
    }

    var description: String {
        switch event {
        case .unreachable(let words), .misconfigured(let words), .lost(let words): words
        case .sent, .relay, .invalid, .withheld, .deadlineReached, .signed: "\(event)"
        }
    }
}
