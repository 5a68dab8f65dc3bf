/// One line of `history.jsonl` (docs/CONTRACT.md#the-history): one finished opening.
///
/// The file is appended to by every member of group `gate`, so a line is an entry only
/// when every member is what gate writes: a real time (`WallTime`), labels
/// (`SafeText.isLabel`), a plausible duration. Anything else is skipped by readers.
public struct HistoryEntry: Sendable, Hashable, JSONRecord {
    /// The longest line that can hold an entry; longer lines are skipped unread.
    public static let maximumLineBytes = 1024

    public var at: String
    public var source: String
    public var uid: UInt32?
    public var adapter: String?
    public var outcome: String
    public var error: String?
    public var durationMs: Int64

    public init(
        at: String,
        source: String,
        uid: UInt32?,
        adapter: String?,
        outcome: String,
        error: String?,
        durationMs: Int64
    ) {
        self.at = at
        self.source = source
        self.uid = uid
        self.adapter = adapter
        self.outcome = outcome
        self.error = error
        self.durationMs = durationMs
    }

    enum CodingKeys: String, CodingKey {
        case at, source, uid, adapter, outcome, error
        case durationMs = "duration_ms"
    }

    /// One line of `history.jsonl`; it fails when the line is not an entry.
    public init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            at: try members.decode(String.self, forKey: .at),
            source: try members.decode(String.self, forKey: .source),
            uid: try members.decodeIfPresent(UInt32.self, forKey: .uid),
            adapter: try members.decodeIfPresent(String.self, forKey: .adapter),
            outcome: try members.decode(String.self, forKey: .outcome),
            error: try members.decodeIfPresent(String.self, forKey: .error),
            durationMs: try members.decode(Int64.self, forKey: .durationMs)
        )
        guard WallTime.isValid(at), SafeText.isLabel(source), SafeText.isLabel(outcome),
            adapter.map(SafeText.isLabel) ?? true, error.map(SafeText.isLabel) ?? true,
            StatusRecord.plausibleDurations.contains(durationMs)
        else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not what gate writes"))
        }
    }

    /// One line's bytes (without its newline); `nil` when it is not an entry.
    public init?(line: some Collection<UInt8>) {
        guard line.count <= Self.maximumLineBytes, line.first == UInt8(ascii: "{") else { return nil }
        self.init(json: line)
    }

    public var json: JSONValue {
        .object([
            ("at", .string(at)),
            ("source", .string(source)),
            ("uid", uid.map { .int(Int64($0)) } ?? .null),
            ("adapter", .string(adapter)),
            ("outcome", .string(outcome)),
            ("error", .string(error)),
            ("duration_ms", .int(durationMs)),
        ])
    }
}
