/// The content of `status.json` (docs/CONTRACT.md#the-status-file): the gate's state as every reader sees it.
public struct StatusRecord: Sendable, Hashable, JSONRecord {
    /// The outcome of the last finished opening, as the status file and widgets show it.
    public enum LastOutcome: String, Sendable, Hashable, Decodable {
        case success
        case timeout
        case error
        /// The opener died mid-cycle (killed, crashed): nobody knows what the relay did.
        case interrupted
    }

    public struct Last: Sendable, Hashable, Decodable {
        public var outcome: LastOutcome
        public var error: String?
        public var adapter: String?
        public var durationMs: Int64?
        public var finishedAt: String
        public var source: String

        public init(
            outcome: LastOutcome,
            error: String?,
            adapter: String?,
            durationMs: Int64?,
            finishedAt: String,
            source: String
        ) {
            self.outcome = outcome
            self.error = error
            self.adapter = adapter
            self.durationMs = durationMs
            self.finishedAt = finishedAt
            self.source = source
        }
    }

    public var state: GateState
    /// ISO 8601 UTC with milliseconds.
    public var since: String
    public var source: String?
    public var pid: Int32?
    public var adapter: String?
    /// When `timeout`/`error` turn back into `ready`.
    public var resetAt: String?
    public var last: Last?

    public init(
        state: GateState,
        since: String,
        source: String?,
        pid: Int32?,
        adapter: String?,
        resetAt: String?,
        last: Last?
    ) {
        self.state = state
        self.since = since
        self.source = source
        self.pid = pid
        self.adapter = adapter
        self.resetAt = resetAt
        self.last = last
    }

    enum CodingKeys: String, CodingKey {
        case state, since, source, pid, adapter, last
        case resetAt = "reset_at"
    }

    /// The record in a status file; it fails when a member of docs/CONTRACT.md#the-status-file is missing or
    /// of the wrong type. Members it does not know are ignored.
    public init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            state: try members.decode(GateState.self, forKey: .state),
            since: try members.decode(String.self, forKey: .since),
            source: try members.decodeIfPresent(String.self, forKey: .source),
            pid: try members.decodeIfPresent(Int32.self, forKey: .pid),
            adapter: try members.decodeIfPresent(String.self, forKey: .adapter),
            resetAt: try members.decodeIfPresent(String.self, forKey: .resetAt),
            last: try members.decodeIfPresent(Last.self, forKey: .last)
        )
        guard isPlausible else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not what gate writes"))
        }
    }

    /// Whether every member is what gate writes (docs/CONTRACT.md#shared-folders: the file is shared, so it is not
    /// trusted): real times within `WallTime.years`, labels (`SafeText.isLabel`), a
    /// positive pid.
    var isPlausible: Bool {
        WallTime.isValid(since) && (resetAt.map(WallTime.isValid) ?? true)
            && (source.map(SafeText.isLabel) ?? true) && (adapter.map(SafeText.isLabel) ?? true)
            && (pid.map { $0 > 0 } ?? true)
    }

    /// What a reader should show (docs/CONTRACT.md#the-status-file): `timeout`/`error` past `reset_at` are
    /// `ready`, and an opening whose lock is no longer held was interrupted.
    ///
    /// - Parameters:
    ///   - now: the current time in the status file's format; ISO 8601 strings of one
    ///     format compare in time order.
    ///   - lockHeld: whether an opener holds the lock right now.
    /// The largest `runtime.reset_delay` a configuration may set (3600 s).
    static let longestResetDelayNs: Int64 = 3600 * 1_000_000_000

    public func effective(now: String, lockHeld: Bool) -> StatusRecord {
        var shown = self
        switch state {
        case .ready:
            break
        case .timeout, .error:
            guard let resetAt else { break }
            // `since` after `now`: the wall clock was stepped back after the write (NTP
            // on a Pi that booted with a stale clock). How long ago that was is unknown:
            // the failure is shown as over rather than for as long as the step lasts.
            let steppedBack = since > now
            // A failure is never shown longer than the longest reset delay after it began,
            // whatever `reset_at` says (a hostile or corrupt record in the shared folder).
            let overlong =
                WallTime.nanoseconds(fromISO8601: since).flatMap { start in
                    WallTime.nanoseconds(fromISO8601: now).map { $0 &- start >= Self.longestResetDelayNs }
                } ?? false
            if steppedBack || overlong || now >= resetAt {
                shown.state = .ready
                shown.since = now < resetAt ? now : resetAt
                shown.resetAt = nil
                shown.adapter = nil
            }
        case .triggering, .waitingForRelayClose:
            if !lockHeld {
                shown.state = .ready
                shown.last = Last(
                    outcome: .interrupted,
                    error: nil,
                    adapter: adapter,
                    durationMs: nil,
                    finishedAt: since,
                    source: source ?? "unknown"
                )
                shown.adapter = nil
                shown.resetAt = nil
            }
        }
        return shown
    }

    /// The object written to `status.json`, keys in the order of docs/CONTRACT.md#the-status-file.
    public var json: JSONValue {
        .object([
            ("state", .string(state.rawValue)),
            ("since", .string(since)),
            ("source", .string(source)),
            ("pid", pid.map { .int(Int64($0)) } ?? .null),
            ("adapter", .string(adapter)),
            ("reset_at", .string(resetAt)),
            ("last", last.map(\.json) ?? .null),
        ])
    }

    /// The durations a shared file may record, in milliseconds: an opening lasts
    /// seconds; a day is far beyond any budget and still prints as a number people read.
    public static let plausibleDurations: ClosedRange<Int64> = 0...86_400_000

    /// The state when nothing has ever been written: ready, no history.
    public static func initial(now: String) -> StatusRecord {
        StatusRecord(state: .ready, since: now, source: nil, pid: nil, adapter: nil, resetAt: nil, last: nil)
    }
}

extension StatusRecord.Last {
    enum CodingKeys: String, CodingKey {
        case outcome, error, adapter, source
        case durationMs = "duration_ms"
        case finishedAt = "finished_at"
    }

    /// The `last` member of a status file; it fails when it is not one.
    public init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            outcome: try members.decode(StatusRecord.LastOutcome.self, forKey: .outcome),
            error: try members.decodeIfPresent(String.self, forKey: .error),
            adapter: try members.decodeIfPresent(String.self, forKey: .adapter),
            durationMs: try members.decodeIfPresent(Int64.self, forKey: .durationMs),
            finishedAt: try members.decode(String.self, forKey: .finishedAt),
            source: try members.decode(String.self, forKey: .source)
        )
        guard WallTime.isValid(finishedAt), SafeText.isLabel(source), error.map(SafeText.isLabel) ?? true,
            adapter.map(SafeText.isLabel) ?? true, durationMs.map(StatusRecord.plausibleDurations.contains) ?? true
        else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not what gate writes"))
        }
    }

    public var json: JSONValue {
        .object([
            ("outcome", .string(outcome.rawValue)),
            ("error", .string(error)),
            ("adapter", .string(adapter)),
            ("duration_ms", durationMs.map { .int($0) } ?? .null),
            ("finished_at", .string(finishedAt)),
            ("source", .string(source)),
        ])
    }

    /// The summary of a finished opening.
    public init(result: OpeningResult, finishedAt: String, source: String) {
        let outcome: StatusRecord.LastOutcome
        switch result.outcome {
        case .success: outcome = .success
        case .timeout: outcome = .timeout
        case .error: outcome = .error
        }
        self.init(
            outcome: outcome,
            error: result.error?.rawValue,
            adapter: result.adapter?.rawValue,
            durationMs: result.duration.milliseconds,
            finishedAt: finishedAt,
            source: source
        )
    }
}
