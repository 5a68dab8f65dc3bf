import GateCore

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
