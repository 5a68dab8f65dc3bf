import FoundationEssentials
import GateCore

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
        do {
            return .success(try JSONDecoder().decode(ControlRequest.self, from: Data(line)))
        } catch let problem as ControlRequestProblem {
            return .failure(problem)
        } catch {
            return .failure(ControlRequestProblem(error as? DecodingError))
        }
    }
}

extension ControlRequest: Decodable {
    enum CodingKeys: String, CodingKey {
        case request, source, via, force, config
        case sent = "sent_monotonic_ns"
    }

    public init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        let kind = try members.decode(String.self, forKey: .request)
        switch kind {
        case "who":
            self = .who
        case "open":
            let source = try members.decode(String.self, forKey: .source)
            let via = try members.decode(String.self, forKey: .via)
            let configPath = try members.decode(String.self, forKey: .config)
            let sent = try members.decode(UInt64.self, forKey: .sent)
            guard OpeningSource.isValid(source) else { throw ControlRequestProblem.field("source") }
            guard let selection = AdapterSelection(rawValue: via) else { throw ControlRequestProblem.field("via") }
            guard !configPath.isEmpty else { throw ControlRequestProblem.field("config") }
            let opening = ControlOpening(
                source: source,
                selection: selection,
                force: try members.decodeIfPresent(Bool.self, forKey: .force) ?? false,
                configPath: configPath,
                sent: MonotonicInstant(nanoseconds: sent)
            )
            self = .open(opening)
        default:
            throw ControlRequestProblem.unknownRequest(SafeText.escaped(String(kind.prefix(40))))
        }
    }
}
