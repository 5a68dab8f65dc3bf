/// The daemon's control socket (docs/CONTRACT.md#the-control-socket): one request per
/// connection, one JSON object per line each way.
///
/// The daemon speaks first: `hello`, naming itself. Only then does the client write
/// one request; the daemon answers `declined` (nothing started: the client may open
/// by itself), or `accepted` followed by a `state` line per state change and one
/// `result`; or `who`; or `error` for a request it cannot read.
public enum ControlRequest: Sendable, Hashable {
    case open(ControlOpening)
    case who

    /// The longest request line the daemon reads; a longer one is refused unread.
    public static let maximumLength = 4096

    public var json: JSONValue {
        switch self {
        case .open(let opening):
            return .object([
                ("request", .string("open")),
                ("source", .string(opening.source)),
                ("via", .string(opening.selection.rawValue)),
                ("force", .bool(opening.force)),
                ("config", .string(opening.configPath)),
                ("sent_monotonic_ns", .int(Int64(clamping: opening.sent.nanoseconds))),
            ])
        case .who:
            return .object([("request", .string("who"))])
        }
    }

    /// The request on one line (without its newline), or why it cannot be read.
    public static func parse(_ line: [UInt8]) -> Result<ControlRequest, ControlRequestProblem> {
        guard line.count <= maximumLength else { return .failure(.tooLong(limit: maximumLength)) }
        guard let value = JSONValue.parse(line), case .object = value else { return .failure(.notJSON) }
        let kind: String
        do {
            kind = try value.requiredString("request")
        } catch {
            return .failure(.field(error.key))
        }
        switch kind {
        case "who":
            return .success(.who)
        case "open":
            let source: String
            let via: String
            let configPath: String
            let sent: UInt64
            do {
                source = try value.requiredString("source")
                via = try value.requiredString("via")
                configPath = try value.requiredString("config")
                sent = try value.requiredInteger("sent_monotonic_ns", as: UInt64.self)
            } catch {
                return .failure(.field(error.key))
            }
            guard OpeningSource.isValid(source) else { return .failure(.field("source")) }
            guard let selection = AdapterSelection(rawValue: via) else { return .failure(.field("via")) }
            guard !configPath.isEmpty else { return .failure(.field("config")) }
            let force: Bool
            switch value["force"] {
            case nil, .null?: force = false
            case .bool(let flag)?: force = flag
            case .int?, .string?, .array?, .object?: return .failure(.field("force"))
            }
            return .success(
                .open(
                    ControlOpening(
                        source: source,
                        selection: selection,
                        force: force,
                        configPath: configPath,
                        sent: MonotonicInstant(nanoseconds: sent)
                    )
                )
            )
        default:
            return .failure(.unknownRequest(SafeText.escaped(String(kind.prefix(40)))))
        }
    }
}

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

/// Why a request line was refused.
public enum ControlRequestProblem: Error, Sendable, Hashable, CustomStringConvertible {
    case notJSON
    case tooLong(limit: Int)
    case field(String)
    case unknownRequest(String)
    /// The line did not come before the daemon stopped waiting for it.
    case incomplete

    public var description: String {
        switch self {
        case .notJSON: return "the request is not one JSON object on one line"
        case .tooLong(let limit): return "the request is longer than \(limit) bytes"
        case .field(let key): return "the request's \(key) is missing or invalid"
        case .unknownRequest(let kind): return "unknown request \(kind) (known: open, who)"
        case .incomplete: return "the request did not end with a newline in time"
        }
    }
}

/// Who serves a runtime folder's control socket (the `hello` banner and the `who` reply).
public struct ControlDaemon: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var configPath: String
    public var runtimeDirectory: String
    /// The daemon's parts that failed since it started (docs/CONTRACT.md#gate-daemon).
    public var parts: [PartReport]

    public init(pid: Int32, uid: UInt32, configPath: String, runtimeDirectory: String, parts: [PartReport] = []) {
        self.pid = pid
        self.uid = uid
        self.configPath = configPath
        self.runtimeDirectory = runtimeDirectory
        self.parts = parts
    }
}

extension PartReport {
    var json: JSONValue {
        .object([
            ("part", .string(part)), ("failures", .int(Int64(failures))), ("last_failure", .string(lastFailure)),
            ("restart_in_ms", restartIn.map { .int($0.milliseconds) } ?? .null),
        ])
    }

    init?(json value: JSONValue) {
        guard let part = try? value.requiredString("part"),
            let failures = try? value.requiredInteger("failures", as: Int.self),
            let lastFailure = try? value.requiredString("last_failure")
        else { return nil }
        let restartIn: Duration?
        switch value["restart_in_ms"] {
        case nil, .null?: restartIn = nil
        case .int(let milliseconds)?: restartIn = .milliseconds(milliseconds)
        case .string?, .bool?, .array?, .object?: return nil
        }
        self.init(part: part, failures: failures, lastFailure: lastFailure, restartIn: restartIn)
    }
}

/// One line from the daemon.
public enum ControlReply: Sendable, Hashable {
    /// The daemon's first line on every connection, before it reads anything: who it
    /// is and which runtime folder it serves. The client sends nothing until it has
    /// checked this against the kernel's word on the peer (`SO_PEERCRED`).
    case hello(ControlDaemon)
    /// Nothing was started; the client may open by itself.
    case declined(String)
    /// The opening is the daemon's now: the client never triggers for it.
    case accepted
    case state(GateState, AdapterKind?)
    case result(OpeningResult)
    case who(ControlDaemon)
    /// The request could not be read; nothing was started.
    case error(String)

    public var json: JSONValue {
        switch self {
        case .hello(let daemon):
            return .object([
                ("reply", .string("hello")), ("program", .string(Self.program)), ("pid", .int(Int64(daemon.pid))),
                ("uid", .int(Int64(daemon.uid))), ("config", .string(daemon.configPath)),
                ("runtime", .string(daemon.runtimeDirectory)),
            ])
        case .declined(let reason):
            return .object([("reply", .string("declined")), ("reason", .string(reason))])
        case .accepted:
            return .object([("reply", .string("accepted"))])
        case .state(let state, let adapter):
            return .object([
                ("reply", .string("state")), ("state", .string(state.rawValue)),
                ("adapter", .string(adapter?.rawValue)),
            ])
        case .result(let result):
            return .object([("reply", .string("result")), ("result", result.json)])
        case .who(let daemon):
            return .object([
                ("reply", .string("who")), ("pid", .int(Int64(daemon.pid))), ("uid", .int(Int64(daemon.uid))),
                ("config", .string(daemon.configPath)), ("runtime", .string(daemon.runtimeDirectory)),
                ("parts", .array(daemon.parts.map(\.json))),
            ])
        case .error(let message):
            return .object([("reply", .string("error")), ("error", .string(message))])
        }
    }

    /// What a `hello` names as its program: gate's daemon.
    public static let program = "gate"

    /// The reply on one line, or nil when it is not one this client knows.
    public static func parse(_ line: [UInt8]) -> ControlReply? {
        guard let value = JSONValue.parse(line), let kind = try? value.requiredString("reply") else { return nil }
        switch kind {
        case "hello":
            guard (try? value.requiredString("program")) == program else { return nil }
            return daemon(value).map(ControlReply.hello)
        case "declined":
            return (try? value.requiredString("reason")).map(ControlReply.declined)
        case "accepted":
            return .accepted
        case "state":
            guard let state = (try? value.requiredString("state")).flatMap(GateState.init(rawValue:)) else {
                return nil
            }
            switch value["adapter"] {
            case nil, .null?: return .state(state, nil)
            case .string(let text)?: return AdapterKind(rawValue: text).map { .state(state, $0) }
            case .bool?, .int?, .array?, .object?: return nil
            }
        case "result":
            return value["result"].flatMap(OpeningResult.init(reply:)).map(ControlReply.result)
        case "who":
            return daemon(value).map(ControlReply.who)
        case "error":
            return (try? value.requiredString("error")).map(ControlReply.error)
        default:
            return nil
        }
    }

    private static func daemon(_ value: JSONValue) -> ControlDaemon? {
        guard let pid = try? value.requiredInteger("pid", as: Int32.self),
            let uid = try? value.requiredInteger("uid", as: UInt32.self),
            let config = try? value.requiredString("config"), let runtime = try? value.requiredString("runtime")
        else { return nil }
        // Absent from daemons before issue 28: no part failed, as far as they say.
        var parts: [PartReport] = []
        if case .array(let reports)? = value["parts"] { parts = reports.compactMap(PartReport.init(json:)) }
        return ControlDaemon(pid: pid, uid: uid, configPath: config, runtimeDirectory: runtime, parts: parts)
    }
}

extension OpeningResult {
    /// The result as the daemon sent it (the object of `gate open --json`). The
    /// reasons come as the daemon worded them: they are kept as words, and the
    /// message as the explanation, so that the client prints exactly what the
    /// daemon's opening would have printed.
    init?(reply value: JSONValue) {
        let errorText: String?
        let adapterText: String?
        let durationMs: Int64
        let message: String
        let outcome: OpeningOutcome
        do {
            guard let known = OpeningOutcome(rawValue: try value.requiredString("outcome")) else { return nil }
            outcome = known
            errorText = try value.optionalString("error")
            adapterText = try value.optionalString("adapter")
            durationMs = try value.requiredInteger("duration_ms", as: Int64.self)
            message = try value.requiredString("message")
        } catch {
            return nil
        }
        guard case .array(let attemptValues)? = value["attempts"] else { return nil }
        var error: GateKeeperError?
        if let errorText {
            guard let known = GateKeeperError(rawValue: errorText) else { return nil }
            error = known
        }
        guard (error?.outcome ?? .success) == outcome else { return nil }
        var adapter: AdapterKind?
        if let adapterText {
            guard let known = AdapterKind(rawValue: adapterText) else { return nil }
            adapter = known
        }
        var attempts: [AttemptRecord] = []
        for attemptValue in attemptValues {
            guard let attempt = AttemptRecord(reply: attemptValue) else { return nil }
            attempts.append(attempt)
        }
        self.init(
            error: error,
            adapter: adapter,
            duration: .milliseconds(durationMs),
            attempts: attempts,
            explanation: message
        )
    }
}

extension AttemptRecord {
    init?(reply value: JSONValue) {
        let reason: String?
        let durationMs: Int64?
        guard let adapter = (try? value.requiredString("adapter")).flatMap(AdapterKind.init(rawValue:)),
            let outcome = (try? value.requiredString("outcome")).flatMap(AttemptOutcome.init(rawValue:)),
            case .bool(let triggerSent)? = value["trigger_sent"]
        else { return nil }
        do {
            reason = try value.optionalString("reason")
            durationMs = try value.optionalInteger("duration_ms", as: Int64.self)
        } catch {
            return nil
        }
        self.init(
            adapter: adapter,
            outcome: outcome,
            reason: reason.map(AttemptReason.adapter),
            duration: durationMs.map { .milliseconds($0) },
            triggerSent: triggerSent
        )
    }
}
