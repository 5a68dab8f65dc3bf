import GateCore
import GateHomeAssistant
import GateSystem
import Logging
import Synchronization

/// What the daemon's services share: the running configuration (replaced whole
/// on a good reload), the warm MQTT link, and where the runtime files live.
///
/// Services learn of a new configuration from one broadcaster (`configUpdates`): each
/// run subscribes before it reads `config`, with a stream of its own, so none can miss
/// a reload while another is slow.
public final class DaemonContext: Sendable {
    public let logger: Logger
    public let paths: RuntimePaths
    /// The file the configuration was read from, re-read on reload.
    public let configPath: String
    public let credentials: CredentialLookup
    public let notifier: SystemdNotifier?
    /// When the daemon started, on CLOCK_MONOTONIC (the clock of the button's edges).
    public let startNs: UInt64
    /// Where presses come from ("gpiochip0 line 17"); nil without a button.
    public let buttonOrigin: String?
    /// The services' loops' liveness, which feeds the watchdog.
    let progress: ServiceProgress

    private let current: Mutex<GateConfig>
    /// Every configuration applied; a reader that lags gets the newest only.
    private let configs = Broadcast<GateConfig>(bufferingPolicy: .bufferingNewest(1))
    /// What the warm link tells Home Assistant's service (`LinkExtras`).
    private let linkNews = Broadcast<(MQTTLink, LinkEvent)>(bufferingPolicy: .unbounded)
    private let linkSlot = Mutex(LinkSlot())
    /// Told each time the last opening in flight ends (a replacement of the link may wait).
    private let idleNews = Broadcast<Void>(bufferingPolicy: .bufferingNewest(1))

    /// Every configuration applied from now on: subscribe, then read `config`.
    func configUpdates() -> AsyncStream<GateConfig> { configs.subscribe() }
    /// The warm link's news from now on: subscribe, then look at `link`.
    func linkEvents() -> AsyncStream<(MQTTLink, LinkEvent)> { linkNews.subscribe() }
    /// Each time the last opening in flight ends, from now on.
    func openingsIdle() -> AsyncStream<Void> { idleNews.subscribe() }

    /// The warm link and the openings that use it: a reload never replaces the link
    /// under an opening in flight (docs/CONTRACT.md#gate-daemon).
    struct LinkSlot {
        var link: MQTTLink?
        var openings = 0
    }
    /// The parts that failed since the start, latest word on each (docs/CONTRACT.md#gate-daemon).
    private let failedParts = Mutex<[PartReport]>([])

    public init(
        config: GateConfig,
        configPath: String,
        paths: RuntimePaths,
        credentials: CredentialLookup,
        notifier: SystemdNotifier?,
        startNs: UInt64,
        buttonOrigin: String?,
        logger: Logger,
        watchdogInterval: Duration? = nil
    ) {
        self.progress = ServiceProgress(watchdogInterval: watchdogInterval)
        self.current = Mutex(config)
        self.configPath = configPath
        self.paths = paths
        self.credentials = credentials
        self.notifier = notifier
        self.startNs = startNs
        self.buttonOrigin = buttonOrigin
        self.logger = logger
    }

    public var config: GateConfig { current.withLock { $0 } }

    /// Replaces the running configuration and tells every subscriber.
    func apply(_ config: GateConfig) {
        current.withLock { $0 = config }
        configs.yield(config)
    }

    /// The warm link openings should use, if one is up or coming up.
    var link: MQTTLink? { linkSlot.withLock { $0.link } }

    /// The one opening pipeline, for what is not an opening of the daemon's own
    /// (`elsewhere` cycles); openings go through `open`.
    var pipeline: OpeningPipeline { pipeline(logger: logger, link: link) }

    /// The one pipeline, logging with `logger` (the opener's metadata), with `link` as
    /// its MQTT adapter and its witness: what it sees on the status topic during the
    /// opening is evidence. Without a link the opening watches on its own.
    private func pipeline(logger: Logger, link: MQTTLink?) -> OpeningPipeline {
        OpeningPipeline(
            paths: paths,
            adapters: AdapterFactory(credentials: credentials, link: { link }, longLived: true),
            statusFeed: link,
            logger: logger
        )
    }

    /// Runs one opening with the running configuration and the warm link of its start:
    /// both stay its own until it ends, whatever a reload does meanwhile.
    func open(
        _ request: OpeningRequest,
        logger: Logger? = nil,
        onStateChange: @escaping (GateState, AdapterKind?) -> Void = { _, _ in }
    ) async -> OpeningResult {
        let (config, link) = linkSlot.withLock { slot -> (GateConfig, MQTTLink?) in
            slot.openings += 1
            return (self.config, slot.link)
        }
        defer {
            let idle = linkSlot.withLock { slot -> Bool in
                slot.openings -= 1
                return slot.openings == 0
            }
            if idle { idleNews.yield(()) }
        }
        return await pipeline(logger: logger ?? self.logger, link: link)
            .open(config: config, request: request, onStateChange: onStateChange)
    }

    /// Takes the warm link out of service for a replacement, unless an opening is in
    /// flight: then nothing changes and the caller tries again at `openingsIdle`. An
    /// opening that starts once it is out watches on its own.
    func takeLinkForReplacement() -> MQTTLink?? {
        linkSlot.withLock { slot -> MQTTLink?? in
            guard slot.openings == 0 else { return .none }
            defer { slot.link = nil }
            return .some(slot.link)
        }
    }

    /// What the link for `config` carries for Home Assistant: its last will and the
    /// command and HA status topics (docs/CONTRACT.md#home-assistant); nothing without `[homeassistant]`.
    /// Under `[esp32] protocol = 2` also protocol v2's replies and epoch announcement, so
    /// that an opening has the epoch and the signed replies at once
    /// (docs/CONTRACT.md#protocol-v2-openings).
    static func linkExtras(for config: GateConfig) -> LinkExtras {
        let v2 = V2Subscription(config: config)
        guard let homeAssistant = config.homeAssistant, let mqtt = config.mqtt else { return LinkExtras(v2: v2) }
        let discovery = HomeAssistantDiscovery(config: homeAssistant, mqtt: mqtt, version: GateRelease.version)
        return LinkExtras(
            will: discovery.will,
            subscriptions: [discovery.topics.command, discovery.topics.homeAssistantStatus],
            retainAsPublished: true,
            v2: v2
        )
    }

    /// Hands a link's news to Home Assistant's service.
    var linkEventHandler: @Sendable (MQTTLink, LinkEvent) -> Void {
        { [linkNews] link, event in linkNews.yield((link, event)) }
    }

    func setLink(_ link: MQTTLink?) {
        linkSlot.withLock { $0.link = link }
    }

    /// What the parts that failed since the start say now, in the order they first failed.
    public var partReports: [PartReport] { failedParts.withLock { $0 } }

    /// Records the latest word on a failed part and tells systemd (`STATUS=`); `gate doctor`
    /// hears it from `partReports`.
    func report(_ report: PartReport) {
        failedParts.withLock { reports in
            if let index = reports.firstIndex(where: { $0.part == report.part }) {
                reports[index] = report
            } else {
                reports.append(report)
            }
        }
        notify(["STATUS=\(statusText(for: config))"])
    }

    /// The one-line `STATUS=` systemd shows under `systemctl status gate`: what runs, then
    /// each part that failed.
    func statusText(for config: GateConfig) -> String {
        ([DaemonStatus.text(for: config, button: buttonOrigin)] + partReports.map(\.sentence)).joined(separator: "; ")
    }

    /// Sends a notification to systemd when it asked for them; failures are logged only:
    /// the daemon's work does not depend on systemd hearing it.
    func notify(_ fields: [String]) {
        guard let notifier else { return }
        if let failure = notifier.send(fields) {
            logger.warning("cannot notify systemd", metadata: ["error": "\(failure)"])
        }
    }
}
