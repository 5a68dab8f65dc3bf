/// Which adapters an opening tries, in which order, and why others are left out (docs/CONTRACT.md#adapter-order).
public enum AdapterSelection: String, Sendable, Hashable, CaseIterable {
    /// UDP when it can work, then MQTT.
    case auto
    /// Only UDP, even off-link: the user asked for it.
    case udp
    /// Only MQTT.
    case mqtt

    public var forcedAdapter: AdapterKind? {
        switch self {
        case .auto: return nil
        case .udp: return .udp
        case .mqtt: return .mqtt
        }
    }
}

/// One network interface as `getifaddrs` reports it.
public struct InterfaceAddress: Sendable, Hashable {
    public var name: String
    public var isUp: Bool
    public var isLoopback: Bool
    public var address: IPAddress
    public var netmask: IPAddress

    public init(name: String, isUp: Bool, isLoopback: Bool, address: IPAddress, netmask: IPAddress) {
        self.name = name
        self.isUp = isUp
        self.isLoopback = isLoopback
        self.address = address
        self.netmask = netmask
    }
}

/// Whether a datagram to an address stays on a directly connected network.
public enum LinkVerdict: Sendable, Hashable {
    case loopback
    case onLink(interface: String)
    /// No up interface has a subnet holding the address.
    case offLink

    /// Decides from an interface table, so that it can be tested with invented tables.
    public static func of(_ target: IPAddress, in table: [InterfaceAddress]) -> LinkVerdict {
        if target.isLoopback { return .loopback }
        for entry in table where entry.isUp && entry.address.family == target.family {
            if entry.address.sharesSubnet(with: target, mask: entry.netmask) {
                return entry.isLoopback ? .loopback : .onLink(interface: entry.name)
            }
        }
        return .offLink
    }
}

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

/// A host name that did not resolve to an address.
public struct ResolutionFailure: Error, Sendable, Hashable {
    public var message: String

    public init(message: String) {
        self.message = message
    }
}
