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
