// libFuzzer target: a `history.jsonl` as members of group gate could append to it,
// read from its end backward in chunks (see README.md).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHistoryFile(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    guard count > 1 else { return 0 }
    // The first byte picks the chunk size and the limit; the rest is the file.
    let chunk = Int(data[0] & 0x3f) + 1
    let limit = Int(data[0] >> 6) * 3 + 1
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: count - 1))
    func tail(chunk: Int, limit: Int, budget: Int = .max) -> HistoryTail {
        var tail = HistoryTail(limit: limit, byteBudget: budget)
        var end = bytes.count
        while end > 0, !tail.isSatisfied {
            let start = max(0, end - chunk)
            tail.feed(bytes[start..<end], atStart: start == 0)
            end = start
        }
        return tail
    }
    let whole = tail(chunk: max(1, bytes.count), limit: limit)
    let chunked = tail(chunk: chunk, limit: limit)
    guard whole.entries == chunked.entries else {
        fatalError(
            "chunks of \(chunk) bytes read \(chunked.entries.count) entries, the whole file \(whole.entries.count)"
        )
    }
    guard chunked.entries.count <= limit else { fatalError("more than \(limit) entries") }
    for entry in chunked.entries {
        guard WallTime.isValid(entry.at), SafeText.isLabel(entry.source), SafeText.isLabel(entry.outcome),
            entry.adapter.map(SafeText.isLabel) ?? true, entry.error.map(SafeText.isLabel) ?? true
        else {
            fatalError("an entry with hostile members was read: \(entry)")
        }
        // What `gate history --json` prints must read back to the same entry.
        guard let again = HistoryEntry(json: Array(entry.json.serialized().utf8)),
            again == entry
        else {
            fatalError("an entry changed on a round trip: \(entry)")
        }
    }
    // Trimming keeps the newest entries that fit, and the trimmed file reads back to them.
    let budget = bytes.count / 2
    let trimmed = tail(chunk: chunk, limit: .max, budget: budget)
    let text = trimmed.text
    guard text.count <= budget else { fatalError("a trimmed file of \(text.count) bytes for a budget of \(budget)") }
    var reread = HistoryTail(limit: .max)
    reread.feed(text, atStart: true)
    guard reread.entries == trimmed.entries else { fatalError("a trimmed file does not read back to its entries") }
    return 0
}
