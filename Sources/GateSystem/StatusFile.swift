#if canImport(Glibc)
import Glibc
#endif
import GateCore

/// `status.json`, replaced atomically on every change (SPEC §6): written to a
/// temporary file in the same folder, fsynced, renamed over the old one. A reader
/// sees the old file or the new one, never a torn one.
public enum StatusFile {
    public static func write(_ record: StatusRecord, to path: String) -> SystemError? {
        AtomicFile.write(Array((record.json.serialized() + "\n").utf8), to: path, mode: 0o664)
    }

    /// The record as written, or `nil` when there is none yet (or it cannot be read).
    public static func read(_ path: String) -> StatusRecord? {
        guard case .success(let bytes) = FileBytes.read(path, limit: 64 * 1024) else { return nil }
        return JSONValue.parse(bytes).flatMap(StatusRecord.init(json:))
    }

    /// What readers show: the rules of SPEC §6 applied to the file and the lock.
    public static func effective(paths: RuntimePaths, now: String = WallClock.iso8601()) -> StatusRecord {
        guard let record = read(paths.statusFile) else { return .initial(now: now) }
        return record.effective(now: now, lockHeld: OpeningLock.isHeld(path: paths.lockFile))
    }
}

/// Whole-file replacement by rename.
public enum AtomicFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t) -> SystemError? {
        let directory = ConfigLocator.directory(of: path)
        var template = Array((directory + "/.tmp-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { return SystemError("mkstemp in \(directory)") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var failure: SystemError?
        var offset = 0
        while offset < bytes.count, failure == nil {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno != EINTR { failure = SystemError("write \(temporary)") }
            } else {
                offset += written
            }
        }
        if failure == nil, fchmod(fd, mode) != 0 { failure = SystemError("fchmod \(temporary)") }
        if failure == nil, fsync(fd) != 0 { failure = SystemError("fsync \(temporary)") }
        close(fd)
        if failure == nil, rename(temporary, path) != 0 { failure = SystemError("rename to \(path)") }
        if failure != nil { unlink(temporary) }
        return failure
    }
}
