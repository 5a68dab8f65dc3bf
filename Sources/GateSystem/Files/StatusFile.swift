import GateCore

/// `status.json`, replaced atomically on every change (docs/CONTRACT.md#the-status-file): written to a
/// temporary file in the same folder, fsynced, renamed over the old one. A reader
/// sees the old file or the new one, never a torn one.
///
/// The runtime folder is shared, so the file goes through `SharedFile`: a link, a FIFO
/// or a device where it should be is an error that names it (never followed, never a
/// hang), and a record whose members are not what gate writes is no record.
public enum StatusFile {
    /// The largest status file a reader accepts; gate writes a few hundred bytes.
    public static let limit = 64 * 1024

    public static func write(_ record: StatusRecord, to path: String) -> SharedFileError? {
        SharedFile.replace(path, with: bytes(record), mode: 0o664)
    }

    /// `record` written and fsynced beside `path`, for a writer that puts it in place
    /// later under the opening lock (the status keeper: docs/CONTRACT.md#the-lock).
    public static func stage(_ record: StatusRecord, for path: String) -> Result<StagedReplacement, SharedFileError> {
        StagedReplacement.stage(path, with: bytes(record), mode: 0o664)
    }

    private static func bytes(_ record: StatusRecord) -> [UInt8] {
        Array((record.json.serialized() + "\n").utf8)
    }

    /// The record as written; `nil` when there is no file yet or it holds no valid
    /// record; an error when the file cannot be used (not a regular file, too large…).
    public static func load(_ path: String) -> Result<StatusRecord?, SharedFileError> {
        do throws(SharedFileError) {
            let bytes = try SharedFile.read(path, limit: limit)
            return .success(StatusRecord(json: bytes))
        } catch {
            return error.problem == .missing ? .success(nil) : .failure(error)
        }
    }

    /// The record as written, or `nil` when there is none yet (or it cannot be read).
    public static func read(_ path: String) -> StatusRecord? {
        guard case .success(let record) = load(path) else { return nil }
        return record
    }

    /// What readers show: the rules of docs/CONTRACT.md#the-status-file applied to the file and the lock; an
    /// error when the file cannot be used.
    ///
    /// The time the record is judged by is taken after the read: a record written
    /// just before it must not begin after `now` (that reads as a clock stepped back,
    /// and a failure as over).
    public static func effective(paths: RuntimePaths) -> Result<StatusRecord, SharedFileError> {
        load(paths.statusFile).map { record in
            let now = WallClock.iso8601()
            guard let record else { return .initial(now: now) }
            return record.effective(now: now, lockHeld: OpeningLock.isHeld(path: paths.lockFile))
        }
    }
}
