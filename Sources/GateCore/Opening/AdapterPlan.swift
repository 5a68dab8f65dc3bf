/// The outcome of planning: what to try, and what was skipped and why.
public struct AdapterPlan: Sendable, Hashable {
    public var adapters: [OpeningMachine.PlannedAdapter]
    public var skipped: [AttemptRecord]
    /// The adapter forced with `--via`, if any.
    public var forced: AdapterKind?

    /// Decides the adapter order (docs/CONTRACT.md#adapter-order).
    ///
    /// - Parameter udpLink: where the ESP32's UDP address is when it is an IP literal;
    ///   `nil` for a host name, which the UDP attempt resolves within its own budget
    ///   (and then checks on-link itself).
    public static func make(config: GateConfig, selection: AdapterSelection, udpLink: LinkVerdict?) -> AdapterPlan {
        var plan = AdapterPlan(adapters: [], skipped: [], forced: selection.forcedAdapter)
        switch selection {
        case .auto:
            if let udp = config.udp {
                switch udpLink {
                case .offLink:
                    plan.skip(.udp, .offLink(host: udp.host))
                case .loopback, .onLink, nil:
                    plan.adapters.append(.init(kind: .udp, budget: .seconds(fromConfig: udp.timeout)))
                }
            } else {
                plan.skip(.udp, .notConfigured(.udp))
            }
            if let mqtt = config.mqtt {
                plan.adapters.append(.init(kind: .mqtt, budget: .seconds(fromConfig: mqtt.timeout)))
            } else {
                plan.skip(.mqtt, .notConfigured(.mqtt))
            }
        case .udp:
            if let udp = config.udp {
                // Forced: tried even off-link.
                plan.adapters.append(.init(kind: .udp, budget: .seconds(fromConfig: udp.timeout)))
            } else {
                plan.skip(.udp, .notConfigured(.udp))
            }
        case .mqtt:
            if let mqtt = config.mqtt {
                plan.adapters.append(.init(kind: .mqtt, budget: .seconds(fromConfig: mqtt.timeout)))
            } else {
                plan.skip(.mqtt, .notConfigured(.mqtt))
            }
        }
        return plan
    }

    private mutating func skip(_ kind: AdapterKind, _ reason: AttemptReason) {
        skipped.append(AttemptRecord(adapter: kind, outcome: .skipped, reason: reason, duration: nil))
    }

    /// A machine that runs this plan.
    public func machine(resetDelay: Duration) -> OpeningMachine {
        OpeningMachine(plan: adapters, skipped: skipped, resetDelay: resetDelay, forced: forced)
    }
}
