/// Who holds the opening lock, as written into the lock file for the message
/// of a refused opener (docs/CONTRACT.md#the-lock), and when the last opening ended (for the cooldown).
public struct LockRecord: Sendable, Hashable, JSONRecord {
    public var pid: Int32?
    public var source: String?
    public var since: String?
    /// CLOCK_MONOTONIC nanoseconds when the last opening that sent a trigger ended.
    public var endedMonotonicNs: UInt64?
    /// CLOCK_MONOTONIC nanoseconds when the last trigger was sent, written before it
    /// was sent: an opener killed mid-cycle never writes its end, and this still
    /// starts the cooldown.
    public var triggeredMonotonicNs: UInt64?

    public init(
        pid: Int32?,
        source: String?,
        since: String?,
        endedMonotonicNs: UInt64?,
        triggeredMonotonicNs: UInt64? = nil
    ) {
        self.pid = pid
        self.source = source
        self.since = since
        self.endedMonotonicNs = endedMonotonicNs
        self.triggeredMonotonicNs = triggeredMonotonicNs
    }

    /// Where the cooldown starts: the end of the last cycle, or its trigger when the
    /// opener that sent it never recorded an end.
    public var cooldownStart: UInt64? {
        switch (endedMonotonicNs, triggeredMonotonicNs) {
        case (nil, nil): return nil
        case (let ended?, nil): return ended
        case (nil, let triggered?): return triggered
        case (let ended?, let triggered?): return max(ended, triggered)
        }
    }

    enum CodingKeys: String, CodingKey {
        case pid, source, since
        case endedMonotonicNs = "ended_monotonic_ns"
        case triggeredMonotonicNs = "triggered_monotonic_ns"
    }

    /// The record in a lock file; it fails when a member is of the wrong type. Every
    /// member may be missing.
    public init(from decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            pid: try members.decodeIfPresent(Int32.self, forKey: .pid),
            source: try members.decodeIfPresent(String.self, forKey: .source),
            since: try members.decodeIfPresent(String.self, forKey: .since),
            endedMonotonicNs: try Self.instant(members, .endedMonotonicNs),
            triggeredMonotonicNs: try Self.instant(members, .triggeredMonotonicNs)
        )
        // The file is shared (docs/CONTRACT.md#shared-folders): what only describes the holder is dropped when it
        // is not what gate writes; the cooldown's instants are kept.
        if let pid, pid <= 0 { self.pid = nil }
        if let source, !SafeText.isLabel(source) { self.source = nil }
        if let since, !WallTime.isValid(since) { self.since = nil }
    }

    /// An instant as gate writes it: a JSON integer from 0 through `Int64.max`.
    private static func instant(_ members: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> UInt64? {
        guard let value = try members.decodeIfPresent(Int64.self, forKey: key) else { return nil }
        guard let instant = UInt64(exactly: value) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: members, debugDescription: "a negative instant")
        }
        return instant
    }

    public var json: JSONValue {
        .object([
            ("pid", pid.map { .int(Int64($0)) } ?? .null),
            ("source", .string(source)),
            ("since", .string(since)),
            ("ended_monotonic_ns", endedMonotonicNs.map { .int(Int64(clamping: $0)) } ?? .null),
            ("triggered_monotonic_ns", triggeredMonotonicNs.map { .int(Int64(clamping: $0)) } ?? .null),
        ])
    }

    /// `pid 1234 (cli) since 2026-11-21T10:00:00.123Z`, or what is known of it.
    public var holderDescription: String {
        var words: [String] = []
        if let pid { words.append("pid \(pid)") }
        if let source { words.append("(\(SafeText.escaped(source)))") }
        if let since { words.append("since \(SafeText.escaped(since))") }
        return words.isEmpty ? "another process" : words.joined(separator: " ")
    }
}
