#if canImport(Glibc)
import Glibc
#endif
import GateCore

/// One line per opening in `history.jsonl` (SPEC §6), bounded in size: past
/// `maximumBytes` the newest half is kept. Written by the lock holder only, so
/// appends and trims never race each other.
public enum HistoryLog {
    public static let maximumBytes = 256 * 1024

    public struct Entry: Sendable, Hashable {
        public var at: String
        public var source: String
        public var uid: UInt32?
        public var adapter: String?
        public var outcome: String
        public var error: String?
        public var durationMs: Int64

        public init(at: String, source: String, uid: UInt32?, adapter: String?, outcome: String, error: String?, durationMs: Int64) {
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
                    at: try json.requiredString("at"), source: try json.requiredString("source"),
                    uid: try json.optionalInteger("uid", as: UInt32.self), adapter: try json.optionalString("adapter"),
                    outcome: try json.requiredString("outcome"), error: try json.optionalString("error"),
                    durationMs: try json.requiredInteger("duration_ms", as: Int64.self)
                )
            } catch {
                return nil
            }
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

    public static func append(_ entry: Entry, to path: String) -> SystemError? {
        let line = Array((entry.json.serialized() + "\n").utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o664)
        guard fd >= 0 else { return SystemError("open \(path)") }
        var owner = stat()
        if fstat(fd, &owner) == 0, owner.st_uid == geteuid(), owner.st_mode & 0o777 != 0o664 {
            // umask would take the group's write bit: other members of `gate` must append too.
            _ = fchmod(fd, 0o664)
        }
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let failure = written == line.count ? nil : SystemError("write \(path)")
        var info = stat()
        let size = fstat(fd, &info) == 0 ? Int(info.st_size) : 0
        close(fd)
        if failure == nil, size > maximumBytes {
            return trim(path)
        }
        return failure
    }

    /// The newest `limit` entries, oldest first; unreadable lines are skipped.
    public static func read(_ path: String, limit: Int) -> [Entry] {
        guard limit > 0, case .success(let bytes) = FileBytes.read(path, limit: 4 * maximumBytes) else { return [] }
        var entries: [Entry] = []
        for line in bytes.split(separator: 0x0a).suffix(limit) {
            if let json = JSONValue.parse(Array(line)), let entry = Entry(json: json) {
                entries.append(entry)
            }
        }
        return entries
    }

    static func trim(_ path: String) -> SystemError? {
        guard case .success(let bytes) = FileBytes.read(path, limit: 4 * maximumBytes) else { return nil }
        var kept = bytes.suffix(maximumBytes / 2)
        // Start at a line boundary: never keep half an entry.
        if let newline = kept.firstIndex(of: 0x0a) {
            kept = kept[(newline + 1)...]
        }
        return AtomicFile.write(Array(kept), to: path, mode: 0o664)
    }
}
