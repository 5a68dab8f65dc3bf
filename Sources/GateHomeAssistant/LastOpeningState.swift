import GateCore

/// What the "Last opening" sensor shows.
public struct LastOpeningState: Sendable, Equatable {
    /// One of `HomeAssistantDiscovery.outcomes`.
    public var outcome: String
    public var adapter: String?
    public var durationMs: Int64?
    public var source: String
    public var finishedAt: String
    public var error: String?

    /// A command refused before anything was sent.
    public static func refused(source: String, at: String, error: String?) -> LastOpeningState {
        LastOpeningState(outcome: "refused", adapter: nil, durationMs: 0, source: source, finishedAt: at, error: error)
    }

    public var attributes: JSONValue {
        .object([
            ("adapter", .string(adapter)),
            ("duration_ms", durationMs.map { .int($0) } ?? .null),
            ("source", .string(source)),
            ("finished_at", .string(finishedAt)),
            ("error", .string(error)),
        ])
    }
}

extension LastOpeningState {
    /// The status file's last opening (in an extension, so that the memberwise init stays).
    public init(_ last: StatusRecord.Last) {
        self.init(
            outcome: last.outcome.rawValue,
            adapter: last.adapter,
            durationMs: last.durationMs,
            source: last.source,
            finishedAt: last.finishedAt,
            error: last.error
        )
    }
}
