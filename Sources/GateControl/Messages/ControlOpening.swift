import GateCore

/// An opening handed to the daemon: what `gate open` would have done itself.
public struct ControlOpening: Sendable, Hashable {
    public var source: String
    public var selection: AdapterSelection
    public var force: Bool
    /// The configuration file the client would use, resolved: the daemon opens only
    /// for its own.
    public var configPath: String
    /// When the client sent the request, on CLOCK_MONOTONIC: client and daemon share
    /// the host, so the daemon knows how long the request waited, whatever queue or
    /// stopped process it waited in.
    public var sent: MonotonicInstant

    /// How old a request may be when its opening begins: older, its client may have
    /// given up (docs/CONTRACT.md#the-control-socket).
    public static let maximumAge = Duration.seconds(2)

    public init(
        source: String,
        selection: AdapterSelection,
        force: Bool,
        configPath: String,
        sent: MonotonicInstant
    ) {
        self.source = source
        self.selection = selection
        self.force = force
        self.configPath = configPath
        self.sent = sent
    }

    /// Why no opening may begin for this request at `now`, or nil when it may.
    public func expiry(at now: MonotonicInstant) -> String? {
        guard sent <= now else {
            return
                "the request's time is ahead of this host's monotonic clock (sent from another clock); nothing was started"
        }
        let age = now.duration(since: sent)
        guard age > Self.maximumAge else { return nil }
        return
            "the request expired: it was sent \(age.humanReadable) ago, more than the \(Self.maximumAge.humanReadable) a request may wait; nothing was started"
    }
}
