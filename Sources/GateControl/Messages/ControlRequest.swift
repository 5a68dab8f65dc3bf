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
