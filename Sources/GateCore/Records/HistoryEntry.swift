/// One line of `history.jsonl` (docs/CONTRACT.md#the-history): one finished opening.
///
/// The file is appended to by every member of group `gate`, so a line is an entry only
/// when every member is what gate writes: a real time (`WallTime`), labels
/// (`SafeText.isLabel`), a plausible duration. Anything else is skipped by readers.
public struct HistoryEntry: Sendable, Hashable {
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

    /// One line of `history.jsonl` (`JSONValue.parse`); `nil` when it is not one.
    public init?(json: JSONValue) {
        do {
            self.init(
                at: try json.requiredString("at"),
                source: try json.requiredString("source"),
                uid: try json.optionalInteger("uid", as: UInt32.self),
                adapter: try json.optionalString("adapter"),
                outcome: try json.requiredString("outcome"),
                error: try json.optionalString("error"),
                durationMs: try json.requiredInteger("duration_ms", as: Int64.self)
            )
        } catch {
            return nil
        }
        guard WallTime.isValid(at), SafeText.isLabel(source), SafeText.isLabel(outcome),
            adapter.map(SafeText.isLabel) ?? true, error.map(SafeText.isLabel) ?? true,
            StatusRecord.plausibleDurations.contains(durationMs)
        else { return nil }
    }

    /// One line's bytes (without its newline); `nil` when it is not an entry.
    public init?(line: some Collection<UInt8>) {
        guard line.count <= Self.maximumLineBytes, line.first == UInt8(ascii: "{"),
            let json = JSONValue.parse(Array(line))
        else { return nil }
        self.init(json: json)
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

/// The newest entries of `history.jsonl`, read from its end backward, one chunk at a
/// time, so that a reader never needs the whole file: whatever a member appended, the
/// most recent entries are found by reading back only as far as they are.
///
/// Feed the file's last chunk first, then the chunk before it, and so on (`feed`),
/// until `isSatisfied` or the start of the file. Lines longer than
/// `HistoryEntry.maximumLineBytes` are skipped without being kept in memory.
public struct HistoryTail: Sendable {
    /// Found entries and their lines as read, newest first.
    public private(set) var found: [(entry: HistoryEntry, line: [UInt8])] = []
    public let limit: Int
    /// The most line bytes (newlines included) the found entries may take.
    public let byteBudget: Int
    public private(set) var isSatisfied = false
    private var usedBytes = 0
    /// The end of the earliest line seen so far, whose start is in a chunk not yet fed.
    private var carry: [UInt8] = []
    private var carryTooLong = false

    public init(limit: Int, byteBudget: Int = .max) {
        self.limit = limit
        self.byteBudget = byteBudget
        isSatisfied = limit <= 0
    }

    /// The entries found, oldest first.
    public var entries: [HistoryEntry] { found.reversed().map(\.entry) }

    /// The found entries' lines, oldest first, each with its newline: a trimmed file.
    public var text: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(usedBytes)
        for (_, line) in found.reversed() {
            bytes += line
            bytes.append(0x0a)
        }
        return bytes
    }

    /// Feeds the bytes just before everything fed so far; `atStart` when they begin the file.
    public mutating func feed(_ chunk: some RandomAccessCollection<UInt8>, atStart: Bool) {
        guard !isSatisfied else { return }
        var end = chunk.endIndex
        var index = chunk.endIndex
        while index > chunk.startIndex {
            index = chunk.index(before: index)
            guard chunk[index] == 0x0a else { continue }
            finishLine(head: chunk[chunk.index(after: index)..<end])
            end = index
            if isSatisfied { return }
        }
        prepend(chunk[chunk.startIndex..<end])
        if atStart { finishLine(head: chunk[chunk.startIndex..<chunk.startIndex]) }
    }

    private mutating func prepend(_ head: some Collection<UInt8>) {
        guard !carryTooLong else { return }
        if head.count + carry.count > HistoryEntry.maximumLineBytes {
            carryTooLong = true
            carry = []
        } else {
            carry = Array(head) + carry
        }
    }

    private mutating func finishLine(head: some Collection<UInt8>) {
        prepend(head)
        defer {
            carry = []
            carryTooLong = false
        }
        guard !carryTooLong, let entry = HistoryEntry(line: carry) else { return }
        guard usedBytes + carry.count + 1 <= byteBudget else {
            isSatisfied = true
            return
        }
        found.append((entry, carry))
        usedBytes += carry.count + 1
        if found.count >= limit { isSatisfied = true }
    }
}
