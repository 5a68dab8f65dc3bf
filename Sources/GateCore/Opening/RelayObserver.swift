/// Follows relay cycles that the daemon only sees on the status topic (docs/CONTRACT.md#gate-daemon:
/// the phone app opened the gate), so that they appear in the status file and the
/// history with `source: "elsewhere"`.
///
/// Pure: status reports (already decoded) and timer expiries go in, with whether
/// a local opening owns what is seen; what to record comes out. The caller decides
/// "local" (the opening lock is held, or a local cycle ended a moment ago and this
/// is its late echo) and owns the one timer.
///
/// Rules:
/// - `1` while nothing is followed and nothing local runs starts a cycle.
/// - `0` ends it successfully; a `0` with no followed cycle is the tail of a local
///   opening (or of one that started before the daemon) and means nothing.
/// - A cycle whose `0` does not come within `releaseBudget` ends as a timeout, as
///   an opening's would: the relay's release was never reported.
/// - A local opening expects exactly one `1` and one `0` of its own cycle; those it
///   did not see while it ran are its echoes for `echoBound` after its end, counted
///   off one by one. Anything beyond is someone else's.
/// - A repeated `1` is harmless (docs/CONTRACT.md#protocol-over-mqtt); an invalid payload is reported and
///   ends nothing.
/// - After an unanswered cycle went into the history, further unanswered ones within
///   `unansweredQuiet` are counted but stay out of it (`Action.unanswered`'s `repeats`).
public struct RelayObserver: Sendable, Hashable {
    public enum Report: Sendable, Hashable {
        case activated
        case released
        case invalid(InvalidAnswer)
    }

    /// What a local opening still expects to see of its own cycle on the status topic
    /// after it ended: one `1` and one `0` per opening whose trigger left, less those
    /// it saw while it ran.
    public struct Echoes: Sendable, Hashable {
        public var activations: Int
        public var releases: Int

        public init(activations: Int, releases: Int) {
            self.activations = activations
            self.releases = releases
        }

        public static let none = Echoes(activations: 0, releases: 0)
    }

    public enum Event: Sendable, Hashable {
        case report(Report, at: MonotonicInstant, local: Bool)
        /// A local opening ended; `owed` is what of its cycle it did not see.
        case localOpeningEnded(owed: Echoes, at: MonotonicInstant)
        /// The timer last asked for by `.armTimer` expired.
        case timerFired(at: MonotonicInstant)
    }

    public enum Action: Sendable, Hashable {
        /// A cycle caused elsewhere began: show `waiting_for_relay_close`.
        case began(at: MonotonicInstant)
        /// Its `0` came: a confirmed cycle.
        case released(duration: Duration)
        /// Its `0` never came within the budget (a lost `0` or a forged `1`): a timeout whose
        /// cooldown counts from the `1` (`began`). `repeats` is 0 for one to add to the history,
        /// else how many came within `unansweredQuiet` of the last one added (kept out of it).
        case unanswered(duration: Duration, began: MonotonicInstant, repeats: Int)
        /// Deliver `.timerFired` at this instant; replaces any earlier timer.
        case armTimer(at: MonotonicInstant)
        /// Something outside the protocol was published; log it.
        case ignoredInvalid(InvalidAnswer)
        /// A late echo of a local opening's own cycle: nothing to record.
        case echo(Report)
    }

    /// How long after a local opening's end its missing echoes are waited for: past
    /// it, a `1` is someone else's cycle even when an echo never came.
    public static let echoBound = Duration.milliseconds(1500)

    /// How long a `1` without its `0` counts as a held relay: the daemon's `elsewhere`
    /// cycle keeps the opening lock, and openers refuse a busy relay (docs/CONTRACT.md#evidence-and-time), at most
    /// this long after the `1`, never the whole MQTT budget.
    ///
    /// The ESP32 holds the relay 400 ms and publishes its `0` at once; 1.5 s leaves
    /// well over a second for the broker and a busy Pi. A `1` still unanswered then is
    /// a lost `0` or a forged `1` (anyone allowed to publish the status topic can send
    /// one): bounding it keeps one such message from shutting everyone out for
    /// `mqtt.timeout` (issue 18 item 4; the broker's ACL is the other half, deploy/mosquitto).
    public static let activeBound = Duration.milliseconds(1500)

    /// After an unanswered cycle went into the history, further unanswered ones within
    /// this window are logged but not added: a client publishing forged `1`s every few
    /// seconds leaves one history line a minute, not one per message.
    public static let unansweredQuiet = Duration.seconds(60)

    public let releaseBudget: Duration
    /// When the followed cycle's `1` came; nil while nothing is followed.
    public private(set) var activeSince: MonotonicInstant?
    /// The last local opening's echoes not seen yet.
    private var echoes = EchoLedger()
    /// When the last unanswered cycle added to the history ended, and how many since.
    private var lastUnansweredRecorded: MonotonicInstant?
    private var unansweredSinceRecorded = 0

    public init(releaseBudget: Duration) {
        self.releaseBudget = releaseBudget
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .localOpeningEnded(let owed, let at):
            echoes.expect(owed, endedAt: at)
            return []
        case .report(.activated, let at, let local):
            if activeSince != nil || local { return [] }
            if echoes.take(.activated, at: at) { return [.echo(.activated)] }
            activeSince = at
            return [.began(at: at), .armTimer(at: at + releaseBudget)]
        case .report(.released, let at, _):
            guard let since = activeSince else {
                return echoes.take(.released, at: at) ? [.echo(.released)] : []
            }
            activeSince = nil
            return [.released(duration: at.duration(since: since))]
        case .report(.invalid(let why), _, _):
            return [.ignoredInvalid(why)]
        case .timerFired(let at):
            guard let since = activeSince else { return [] }
            guard at >= since + releaseBudget else { return [.armTimer(at: since + releaseBudget)] }
            activeSince = nil
            return [.unanswered(duration: at.duration(since: since), began: since, repeats: countUnanswered(at: at))]
        }
    }

    /// Whether `report` could begin a cycle to follow: then the caller asks the opening
    /// lock, before `handle`, whether a local opening owns it (`local`), and keeps the lock
    /// only for a cycle that `.began` (an echo lets it go).
    public func beginsCycle(_ report: Report) -> Bool {
        report == .activated && activeSince == nil
    }

    /// 0 when an unanswered cycle ending `at` goes into the history; else how many came
    /// within `unansweredQuiet` of the last one that did.
    private mutating func countUnanswered(at: MonotonicInstant) -> Int {
        if let last = lastUnansweredRecorded, at.duration(since: last) < Self.unansweredQuiet {
            unansweredSinceRecorded += 1
            return unansweredSinceRecorded
        }
        lastUnansweredRecorded = at
        unansweredSinceRecorded = 0
        return 0
    }

    /// Maps a decoded status payload to a report; nil for events a payload cannot be.
    public static func report(for event: AdapterEvent) -> Report? {
        switch event {
        case .relay(.activated): return .activated
        case .relay(.released): return .released
        case .invalid(let why): return .invalid(why)
        case .sent, .unreachable, .lost, .misconfigured, .withheld, .deadlineReached, .signed: return nil
        }
    }
}
