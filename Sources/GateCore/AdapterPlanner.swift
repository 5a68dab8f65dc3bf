/// Which adapters an opening tries, in which order, and why others are left out (SPEC §2).
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

    /// Decides the adapter order of SPEC §2.
    ///
    /// - Parameter udpLink: where the ESP32's UDP address is, or why it could not be
    ///   resolved; `nil` when UDP is not configured.
    public static func make(config: GateConfig, selection: AdapterSelection, udpLink: Result<LinkVerdict, ResolutionFailure>?) -> AdapterPlan {
        var plan = AdapterPlan(adapters: [], skipped: [], forced: selection.forcedAdapter)
        switch selection {
        case .auto:
            if let udp = config.udp {
                switch udpLink {
                case .success(.loopback), .success(.onLink):
                    plan.adapters.append(.init(kind: .udp, budget: .seconds(fromConfig: udp.timeout)))
                case .success(.offLink):
                    plan.skip(.udp, "\(udp.host) is not on a directly connected network")
                case .failure(let failure):
                    plan.skip(.udp, failure.message)
                case nil:
                    plan.skip(.udp, "the ESP32's address was not checked")
                }
            } else {
                plan.skip(.udp, "not configured (no [udp] table)")
            }
            if let mqtt = config.mqtt {
                plan.adapters.append(.init(kind: .mqtt, budget: .seconds(fromConfig: mqtt.timeout)))
            } else {
                plan.skip(.mqtt, "not configured (no [mqtt] table)")
            }
        case .udp:
            if let udp = config.udp {
                // Forced: tried even off-link, but an unresolvable name cannot be sent to.
                if case .failure(let failure) = udpLink {
                    plan.skipped.append(AttemptRecord(adapter: .udp, outcome: .unreachable, reason: failure.message, duration: .zero))
                } else {
                    plan.adapters.append(.init(kind: .udp, budget: .seconds(fromConfig: udp.timeout)))
                }
            } else {
                plan.skip(.udp, "not configured (no [udp] table)")
            }
        case .mqtt:
            if let mqtt = config.mqtt {
                plan.adapters.append(.init(kind: .mqtt, budget: .seconds(fromConfig: mqtt.timeout)))
            } else {
                plan.skip(.mqtt, "not configured (no [mqtt] table)")
            }
        }
        return plan
    }

    private mutating func skip(_ kind: AdapterKind, _ reason: String) {
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
