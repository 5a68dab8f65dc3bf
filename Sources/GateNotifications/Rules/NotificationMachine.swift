import GateCore

/// Which openings become desktop notifications, with which words, replacing which
/// (docs/CONTRACT.md#desktop): events in (status records as the status file shows them, the
/// server's answers), actions out (notices to show). No I/O.
///
/// The status file is the one source: every opener writes it (the CLI, widgets,
/// the button, Home Assistant, the daemon's `elsewhere` recording), so it sees all
/// openings whoever made them. A reader may miss intermediate states (several
/// writes between two reads), so an opening is recognised by what changed:
/// a busy record while none was in flight begins one; a new `last` ends one.
///
/// One notification per opening: its first notice is shown as a new notification,
/// and each later one for the same opening replaces it (`replaces` is the id the
/// server gave the first). Any number of writes for one opening make at most two
/// notices: its start and its end.
///
/// The file is anyone's in group `gate` (docs/CONTRACT.md#shared-folders), so what it
/// says is text, never markup, and how many openings it shows is theirs to choose:
/// bodies are escaped for the server's markup (`SafeText.markup`), and new
/// notifications are rationed (`NotificationBudget`: `burst` at once, then one per
/// `refill`); replacing an opening's own notification costs nothing. What was held
/// back is counted in the next notice shown.
///
/// The caller shows each `.show` notice in order and feeds back `.shown(id:)` or
/// `.notShown` for each, in the same order, before the next observation; a
/// `.heldBack` notice is only logged.
public struct NotificationMachine: Sendable {
    public enum Urgency: UInt8, Sendable {
        case low = 0
        case normal = 1
        case critical = 2
    }

    public struct Notice: Sendable, Equatable {
        /// Plain text, as the specification has it for summaries.
        public var summary: String
        /// Markup (the notification specification's subset of XML), every word from the
        /// status file escaped: dunst and others read bodies as markup whether or not they
        /// announce `body-markup`.
        public var body: String
        public var urgency: Urgency
        /// The server's id of the notification this one replaces; 0: a new one.
        public var replaces: UInt32
        /// How long the server shows it; 0: until dismissed.
        public var timeoutMilliseconds: Int32
    }

    public enum Event: Sendable {
        /// The status file's effective record, read after it changed, and when (CLOCK_MONOTONIC).
        case observed(StatusRecord, at: MonotonicInstant)
        /// The server showed the last notice under this id.
        case shown(id: UInt32)
        /// The last notice could not be shown (no server, an error): the opening's next
        /// notice is a new notification.
        case notShown
        /// A reload changed `[notify]`.
        case settings(NotifyConfig)
    }

    public enum Action: Sendable, Equatable {
        case show(Notice)
        /// Not shown: new notifications came faster than the budget allows; `count` were
        /// held back since the last one shown (1: a burst begins).
        case heldBack(Notice, count: Int)
    }

    /// The openings made by someone other than this desktop's user: notified even
    /// when they succeed.
    public static let othersSources: Set<String> = ["elsewhere", "button", "homeassistant"]
    /// New notifications that may appear at once; real openings, 2 s of cooldown apart, never
    /// come faster than one per `refill` for long.
    public static let burst = 4
    /// One more new notification per this much time.
    public static let refill: Duration = .seconds(15)

    struct Opening: Equatable {
        var source: String
        var pid: Int32?
        /// The server's id of its notification, once shown.
        var id: UInt32?
    }

    private var settings: NotifyConfig
    /// The last finished opening as last read: the same `last` again is no new opening.
    private var lastSeen: StatusRecord.Last?
    private var inFlight: Opening?
    /// For each notice shown and not yet answered, in order: the opening it began (whose
    /// later notices replace it), or nil for a notice that began none.
    private var awaitingIDs: [Opening?] = []
    private var budget = NotificationBudget(capacity: NotificationMachine.burst, interval: NotificationMachine.refill)
    /// Notices held back by the budget since the last one shown.
    private var withheld = 0

    /// Starts from the record the file holds now: what already happened is not notified,
    /// and an opening already in flight is notified only at its end.
    public init(settings: NotifyConfig, current: StatusRecord?) {
        self.settings = settings
        self.lastSeen = current?.last
        if let current, current.state.isBusy {
            inFlight = Opening(source: current.source ?? "unknown", pid: current.pid, id: nil)
        }
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .settings(let new):
            settings = new
            return []
        case .shown(let id):
            // Matched by order: one observation can end one opening and begin the next.
            if !awaitingIDs.isEmpty, var opening = awaitingIDs.removeFirst(), opening == inFlight {
                opening.id = id
                inFlight = opening
            }
            return []
        case .notShown:
            if !awaitingIDs.isEmpty { awaitingIDs.removeFirst() }
            return []
        case .observed(let record, let now):
            return observe(record, at: now)
        }
    }

    private mutating func observe(_ record: StatusRecord, at now: MonotonicInstant) -> [Action] {
        // Every notice was answered before this observation; an unanswered one has no id.
        awaitingIDs.removeAll()
        var actions: [Action] = []
        if let last = record.last, last != lastSeen {
            lastSeen = last
            // The opening in flight ended, or one came and went between two reads.
            let opening = inFlight?.source == last.source ? inFlight : nil
            inFlight = nil
            if let notice = finished(last, replacing: opening?.id) {
                let action = admit(notice, at: now)
                actions.append(action)
                if case .show = action { awaitingIDs.append(nil) }
            }
        }
        switch record.state {
        case .triggering, .waitingForRelayClose:
            let opening = Opening(source: record.source ?? "unknown", pid: record.pid, id: nil)
            if let current = inFlight, current.source == opening.source, current.pid == opening.pid { break }
            inFlight = opening
            guard wants(source: opening.source) else { break }
            let start = notice("Gate: opening (\(opening.source))…", SafeText.markup(Self.startBody(record)), .low)
            let action = admit(start, at: now)
            actions.append(action)
            if case .show = action { awaitingIDs.append(opening) }
        case .ready, .timeout, .error:
            break
        }
        return actions
    }

    /// The notice as shown, or held back when it would be a new notification beyond the budget.
    private mutating func admit(_ notice: Notice, at now: MonotonicInstant) -> Action {
        if notice.replaces == 0, !budget.take(at: now) {
            withheld += 1
            return .heldBack(notice, count: withheld)
        }
        var shown = notice
        if withheld > 0 {
            let openings = withheld == 1 ? "1 earlier notification" : "\(withheld) earlier notifications"
            shown.body += "\n(\(openings) not shown: more than \(Self.burst) at once; `gate history` has every opening)"
            withheld = 0
        }
        return .show(shown)
    }

    private func wants(source: String) -> Bool {
        settings.everyOpening || Self.othersSources.contains(source)
    }

    /// A notice shown for `[notify]`'s timeout, replacing the notification `id` (nil: a new one).
    private func notice(_ summary: String, _ body: String, _ urgency: Urgency, replacing id: UInt32? = nil) -> Notice {
        Notice(
            summary: summary,
            body: body,
            urgency: urgency,
            replaces: id ?? 0,
            timeoutMilliseconds: Int32(clamping: settings.timeoutMilliseconds)
        )
    }

    private func finished(_ last: StatusRecord.Last, replacing id: UInt32?) -> Notice? {
        let source = last.source
        let duration = last.durationMs.map { "\($0) ms" }
        switch last.outcome {
        case .success:
            // A replaced start notice is always finished, whoever opened.
            guard wants(source: source) || id != nil else { return nil }
            let how = [last.adapter, duration].compactMap { $0 }.joined(separator: ", ")
            let summary = "Gate: relay cycle confirmed" + (how.isEmpty ? "" : " (\(how))")
            return notice(summary, SafeText.markup("source: \(source)"), .normal, replacing: id)
        case .timeout, .error:
            let why = last.error.flatMap(GateKeeperError.init(rawValue:))?.summary ?? last.error ?? "the opening failed"
            let details = [last.adapter.map { "via \($0)" }, duration].compactMap { $0 }.joined(separator: ", ")
            let body = SafeText.markup(why + (details.isEmpty ? "" : " (\(details))"))
            return notice("Gate: opening failed (\(source))", body, .critical, replacing: id)
        case .interrupted:
            let body = "the opener stopped mid-cycle; the relay may have cycled"
            return notice("Gate: opening interrupted (\(source))", body, .critical, replacing: id)
        }
    }

    private static func startBody(_ record: StatusRecord) -> String {
        switch record.state {
        case .waitingForRelayClose: "relay on (1), waiting for its release (0)"
        case .triggering, .ready, .timeout, .error: "trigger sent" + (record.adapter.map { " via \($0)" } ?? "")
        }
    }
}

extension GateState {
    /// An opening is in flight.
    public var isBusy: Bool {
        switch self {
        case .triggering, .waitingForRelayClose: true
        case .ready, .timeout, .error: false
        }
    }
}
