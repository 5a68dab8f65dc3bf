import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// A whole new file written and fsynced beside the one it is to replace, not yet in
/// its place: the slow half of `SharedFile.replace` (on an SD card an fsync can take
/// most of a second), done before a lock is taken, and the quick half (`commit`, one
/// rename) done under it, so that nobody waits for the card (docs/CONTRACT.md#the-lock).
///
/// Exactly one of `commit` and `discard` is called; a writer killed in between leaves
/// a temporary file that the status keeper sweeps.
public struct StagedReplacement: Sendable {
    /// The temporary file, in the same folder (`.tmp-XXXXXX`).
    public let temporary: String
    /// The name it replaces.
    public let path: String

    /// Writes `bytes` with `mode` to a temporary file in `path`'s folder (`mkstemp`) and
    /// fsyncs it.
    public static func stage(_ path: String, with bytes: [UInt8], mode: mode_t) -> Result<Self, SharedFileError> {
        let directory = ConfigLocator.directory(of: path)
        var template = Array((directory + "/" + SharedFile.temporaryPrefix + "XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            return .failure(SharedFileError(path: path, problem: .system(SystemError("mkstemp in \(directory)"))))
        }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var failure = SharedFile.writeAll(fd, bytes, path: temporary)
        if failure == nil, fchmod(fd, mode) != 0 {
            failure = SharedFileError(path: temporary, problem: .system(SystemError("fchmod")))
        }
        if failure == nil, fsync(fd) != 0 {
            failure = SharedFileError(path: temporary, problem: .system(SystemError("fsync")))
        }
        close(fd)
        if let failure {
            unlink(temporary)
            return .failure(failure)
        }
        return .success(StagedReplacement(temporary: temporary, path: path))
    }

    /// Renames the new file over `path`: readers see the old file or the new one, and
    /// whatever was at `path` (a link, a FIFO) is replaced, never followed.
    public func commit() -> SharedFileError? {
        guard rename(temporary, path) == 0 else {
            let failure = SharedFileError(path: path, problem: .system(SystemError("rename")))
            discard()
            return failure
        }
        return nil
    }

    /// Removes the new file: what it held is no longer wanted.
    public func discard() {
        unlink(temporary)
    }
}
