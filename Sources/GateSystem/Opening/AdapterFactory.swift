import GateCore
import GateV2
import Logging
import Plumbing

/// The one place adapters are built, for every opener.
public struct AdapterFactory: Sendable {
    let credentials: CredentialLookup
    /// The daemon's warm link, when there is one: MQTT then publishes through it.
    let link: @Sendable () -> MQTTLink?
    /// Adapters of the caller's making (the pipeline's own tests script them).
    let custom: (@Sendable (AdapterKind) -> any GateAdapter)?
    /// The daemon: a process that outlives its openings (see `MQTTLink.tcpFirst`).
    let longLived: Bool
    /// The broker connections of the MQTT adapters made here that are still up.
    public let sessions = MQTTSessions()

    public init(
        credentials: CredentialLookup,
        link: @escaping @Sendable () -> MQTTLink? = { nil },
        longLived: Bool = false
    ) {
        self.credentials = credentials
        self.link = link
        self.custom = nil
        self.longLived = longLived
    }

    /// Every adapter made by `make`: for driving the pipeline with scripted adapters.
    public init(custom make: @escaping @Sendable (AdapterKind) -> any GateAdapter) {
        self.credentials = CredentialLookup(sources: [])
        self.link = { nil }
        self.custom = make
        self.longLived = false
    }

    /// The password lookup chain, in order (docs/CONTRACT.md#secrets).
    public static func credentials(environment: [String: String] = ProcessEnvironment.current()) -> CredentialLookup {
        CredentialLookup(sources: [
            SystemdCredentials(environment: environment),
            SecretServiceSource(environment: environment),
        ])
    }

    /// The status watch of an opening that has no other (`gate open` outside the
    /// daemon): an MQTT link for the opening's length, subscribed to the status topic,
    /// through which the MQTT attempt also publishes. Nil without `[mqtt]` and for the
    /// caller's own adapters. Under protocol v2 it also brings the epoch announcement
    /// and the signed replies.
    func watch(config: GateConfig, plan: AdapterPlan, logger: Logger) -> MQTTLink? {
        guard custom == nil, let mqtt = config.mqtt else { return nil }
        let made = try? link(mqtt, extras: LinkExtras(v2: V2Subscription(config: config)), logger: logger)
        guard let watch = made else {
            logger.warning("cannot watch the status topic for this opening (no wake-up pipe)")
            return nil
        }
        if let failure = watch.start() {
            logger.warning(
                "cannot watch the status topic for this opening",
                metadata: ["error": "\(SystemError("pthread_create", code: failure))"]
            )
            return nil
        }
        return watch
    }

    func make(
        _ kind: AdapterKind,
        config: GateConfig,
        selection: AdapterSelection,
        logger: Logger,
        watch: MQTTLink? = nil
    ) -> any GateAdapter {
        if let custom { return custom(kind) }
        switch kind {
        case .udp:
            return udp(config: config, selection: selection, logger: logger)
        case .mqtt:
            guard let mqtt = config.mqtt else {
                return FailedAdapter(kind: .mqtt, event: .misconfigured("no [mqtt] table in the configuration"))
            }
            if let watch, watch.config.sameLink(as: mqtt) {
                return LinkAdapter(link: watch, failFast: true)
            }
            // The daemon's warm link when it is up; one made for another configuration (a
            // reload is under way) is not used.
            if let warm = link(), warm.config.sameLink(as: mqtt), warm.isReady {
                return LinkAdapter(link: warm, failFast: false)
            }
            logger.info("MQTT link not up; connecting afresh for this opening", metadata: ["adapter": "mqtt"])
            guard let fresh = try? link(mqtt, tcpFirst: longLived, logger: logger) else {
                return FailedAdapter(kind: .mqtt, event: .unreachable("cannot prepare an MQTT link (no wake-up pipe)"))
            }
            return LinkAdapter(link: fresh, failFast: true, ownsLink: true)
        }
    }

    /// A link for one opening or one attempt: its trouble is the opening's words, not
    /// warnings in the log.
    private func link(
        _ mqtt: MQTTConfig,
        extras: LinkExtras = LinkExtras(),
        tcpFirst: Bool = false,
        logger: Logger
    ) throws(WakeSignalError) -> MQTTLink {
        try MQTTLink(
            config: mqtt,
            credentials: credentials,
            logger: logger,
            extras: extras,
            sessions: sessions,
            troubleLevel: .info,
            tcpFirst: tcpFirst,
            onUnclaimed: { _, _ in }
        )
    }
}

extension AdapterFactory {
    /// Protocol v2's adapter for one attempt (docs/CONTRACT.md#protocol-v2-openings): the
    /// frame's 32 bytes over UDP, or its 64 hex digits through the MQTT link (the daemon's,
    /// or the opening's own watch), which also reads the replies. A datagram counts only as
    /// the genuine reply to `frame` under `key`; anything else is ignored.
    func makeV2(
        _ kind: AdapterKind,
        config: GateConfig,
        selection: AdapterSelection,
        frame: V2Frame,
        key: V2Key,
        logger: Logger,
        watch: MQTTLink?
    ) -> any GateAdapter {
        if let custom { return custom(kind) }
        switch kind {
        case .udp:
            return udp(config: config, selection: selection, logger: logger, trigger: frame.bytes) { datagram in
                guard let reply = key.reply(to: frame, datagram: Array(datagram)) else { return [] }
                return [.signed(reply.kind, epoch: reply.epoch)]
            }
        case .mqtt:
            guard let mqtt = config.mqtt, let v2 = V2Subscription(config: config) else {
                return FailedAdapter(kind: .mqtt, event: .misconfigured("no [mqtt] table in the configuration"))
            }
            guard let link = v2Link(config: config, watch: watch) else {
                let broker = MQTTStatusTopic(config: mqtt).broker
                return FailedAdapter(
                    kind: .mqtt,
                    event: .unreachable("no MQTT link to \(broker) for this opening; nothing was published")
                )
            }
            return LinkAdapter(link: link, request: (v2.requests, Array(frame.hex.utf8)), failFast: link === watch)
        }
    }

    /// The UDP adapter of either protocol: v1's trigger and decoder unless told otherwise.
    private func udp(
        config: GateConfig,
        selection: AdapterSelection,
        logger: Logger,
        trigger: [UInt8] = [0x01],
        decode: @escaping @Sendable (ArraySlice<UInt8>) -> [AdapterEvent] = { UDPReplyDecoder.events(for: $0) }
    ) -> any GateAdapter {
        guard let udp = config.udp else {
            return FailedAdapter(kind: .udp, event: .misconfigured("no [udp] table in the configuration"))
        }
        return UDPAdapter(
            host: udp.host,
            port: udp.port,
            onLinkOnly: selection == .auto,
            interfaces: InterfaceTable.current,
            logger: logger,
            trigger: trigger,
            decode: decode
        )
    }

    /// The link an opening under protocol v2 reads and publishes through: the opening's
    /// own watch, or the daemon's link when it was made for this configuration.
    func v2Link(config: GateConfig, watch: MQTTLink?) -> MQTTLink? {
        guard let mqtt = config.mqtt, let link = watch ?? link(), link.config.sameLink(as: mqtt),
            link.extras.v2 == V2Subscription(config: config)
        else { return nil }
        return link
    }
}
