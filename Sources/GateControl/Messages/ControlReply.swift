import FoundationEssentials
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
        try? JSONDecoder().decode(ControlReply.self, from: Data(line))
    }
}

extension ControlReply: Decodable {
    enum CodingKeys: String, CodingKey {
        case reply, program, reason, state, adapter, result, error
    }

    public init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        switch try members.decode(String.self, forKey: .reply) {
        case "hello":
            guard try members.decode(String.self, forKey: .program) == Self.program else {
                throw DecodingError.dataCorruptedError(forKey: .program, in: members, debugDescription: "not gate")
            }
            self = .hello(try ControlDaemon(reply: decoder))
        case "declined":
            self = .declined(try members.decode(String.self, forKey: .reason))
        case "accepted":
            self = .accepted
        case "state":
            self = .state(
                try members.decode(GateState.self, forKey: .state),
                try members.decodeIfPresent(AdapterKind.self, forKey: .adapter)
            )
        case "result":
            self = .result(try OpeningResult(reply: members.superDecoder(forKey: .result)))
        case "who":
            self = .who(try ControlDaemon(reply: decoder))
        case "error":
            self = .error(try members.decode(String.self, forKey: .error))
        default:
            throw DecodingError.dataCorruptedError(forKey: .reply, in: members, debugDescription: "unknown reply")
        }
    }
}
