import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// One line per opening in `history.jsonl` (docs/CONTRACT.md#the-history), bounded in size: past
/// `maximumBytes` the newest entries that fit in half of it are kept. Written by the
/// lock holder only, so appends and trims never race each other.
///
/// Every member of group `gate` can append to the file, so it is read from its end
/// backward (`HistoryTail`), skipping whatever is not an entry: the most recent
/// openings stay readable, and trimming never needs the whole file, whatever was
/// appended (up to `scanBytes` of it after the last opening).
public enum HistoryLog {
    public typealias Entry = HistoryEntry

    public static let maximumBytes = 256 * 1024
    /// How far back from the end readers and trimming look for entries.
    public static let scanBytes = 16 * maximumBytes

    public static func append(_ entry: Entry, to path: String) -> SharedFileError? {
        let fd: Int32
        switch SharedFile.open(path, access: .append, create: 0o664) {
        case .success(let opened): fd = opened
        case .failure(let error): return error
        }
        defer { close(fd) }
        var line = Array((entry.json.serialized() + "\n").utf8)
        var info = stat()
        guard fstat(fd, &info) == 0 else { return SharedFileError(path: path, problem: .system(SystemError("fstat"))) }
        // A line someone left without its newline must not swallow this one.
        var last: UInt8 = 0x0a
        if info.st_size > 0, pread(fd, &last, 1, off_t(info.st_size - 1)) == 1, last != 0x0a {
            line.insert(0x0a, at: 0)
        }
        if let failure = SharedFile.writeAll(fd, line, path: path) { return failure }
        guard fstat(fd, &info) == 0 else { return SharedFileError(path: path, problem: .system(SystemError("fstat"))) }
        return Int(info.st_size) > maximumBytes ? trim(fd, path: path) : nil
    }

    /// The newest `limit` entries, oldest first; lines that are not entries are
    /// skipped; no file yet is no entries.
    public static func load(_ path: String, limit: Int) -> Result<[Entry], SharedFileError> {
        let fd: Int32
        switch SharedFile.open(path, access: .readOnly) {
        case .success(let opened): fd = opened
        case .failure(let error) where error.problem == .missing: return .success([])
        case .failure(let error): return .failure(error)
        }
        defer { close(fd) }
        var tail = HistoryTail(limit: limit)
        if let failure = fill(&tail, from: fd, path: path) { return .failure(failure) }
        return .success(tail.entries)
    }

    /// Feeds `tail` the file's chunks from its end backward, until it has enough.
    private static func fill(_ tail: inout HistoryTail, from fd: Int32, path: String) -> SharedFileError? {
        SharedFile.readBackward(fd, path: path, maximumBytes: scanBytes) { chunk, atStart in
            tail.feed(chunk, atStart: atStart)
            return !tail.isSatisfied
        }
    }

    /// The newest `limit` entries, oldest first; none when the file cannot be read.
    public static func read(_ path: String, limit: Int) -> [Entry] {
        (try? load(path, limit: limit).get()) ?? []
    }

    /// Keeps the newest entries that fit in half of `maximumBytes` (junk dropped), by
    /// replacing the file: read from `fd`, the file just appended to.
    static func trim(_ fd: Int32, path: String) -> SharedFileError? {
        var tail = HistoryTail(limit: .max, byteBudget: maximumBytes / 2)
        if let failure = fill(&tail, from: fd, path: path) { return failure }
        return SharedFile.replace(path, with: tail.text, mode: 0o664)
    }
}
