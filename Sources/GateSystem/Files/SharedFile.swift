import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// The one way into the files of the shared folders, `/run/gate` and `/var/lib/gate`
/// (docs/CONTRACT.md#shared-folders). Every member of group `gate` can create, delete and rename entries
/// there, so nothing in them is trusted:
///
/// - no symbolic link is followed (`O_NOFOLLOW`), and only regular files are used
///   (checked before opening, so that no device or FIFO is ever opened, and again with
///   `fstat` on what was opened); a file that is written must have exactly one name;
/// - no open blocks (`O_NONBLOCK`: a FIFO cannot hang a reader);
/// - files are created with their documented mode (`O_EXCL`, then `fchmod` on the new
///   descriptor, whatever the umask), never `chmod`-ed through a path;
/// - reads are bounded; whole files are replaced with a temporary file in the same
///   folder, fsync and rename.
public enum SharedFile {
    public enum Access: Sendable {
        case readOnly
        case readWrite
        /// `O_RDWR | O_APPEND`: every write goes to the end, and the file can be read back.
        case append

        var flags: Int32 {
            switch self {
            case .readOnly: return O_RDONLY
            case .readWrite: return O_RDWR
            case .append: return O_RDWR | O_APPEND
            }
        }
    }

    /// Opens `name` in the folder `directory` (a descriptor of `openDirectory`, or
    /// `AT_FDCWD` with a full path as `name`); `path` names it in errors. With `create`,
    /// a missing file is made with that mode. The caller owns the descriptor.
    public static func open(
        _ name: String,
        in directory: Int32 = AT_FDCWD,
        path: String? = nil,
        access: Access,
        create mode: mode_t? = nil
    ) -> Result<Int32, SharedFileError> {
        let path = path ?? name
        let flags = access.flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
        var fd: Int32 = -1
        // A file deleted between a failed open and O_EXCL, or made in between, is tried again.
        for _ in 0..<8 {
            // Looked at first: a device or a FIFO is never opened at all.
            var info = stat()
            if fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0, let kind = kindIfNotRegular(info.st_mode) {
                return .failure(SharedFileError(path: path, problem: .notRegular(kind)))
            }
            fd = openat(directory, name, flags)
            if fd >= 0 { break }
            let code = errno
            if code == EINTR { continue }
            guard code == ENOENT, let mode else {
                return .failure(classify(name, in: directory, path: path, code: code))
            }
            fd = openat(directory, name, flags | O_CREAT | O_EXCL, mode)
            if fd >= 0 {
                // The umask must not narrow the mode that lets the group share the file.
                if fchmod(fd, mode) != 0 {
                    let failure = SystemError("fchmod")
                    close(fd)
                    return .failure(SharedFileError(path: path, problem: .system(failure)))
                }
                break
            }
            if errno != EEXIST && errno != EINTR {
                return .failure(classify(name, in: directory, path: path, code: errno))
            }
        }
        guard fd >= 0 else {
            return .failure(SharedFileError(path: path, problem: .system(SystemError("open", code: EAGAIN))))
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let failure = SystemError("fstat")
            close(fd)
            return .failure(SharedFileError(path: path, problem: .system(failure)))
        }
        if let kind = kindIfNotRegular(info.st_mode) {
            close(fd)
            return .failure(SharedFileError(path: path, problem: .notRegular(kind)))
        }
        if access != .readOnly, info.st_nlink != 1 {
            close(fd)
            return .failure(SharedFileError(path: path, problem: .hardLinks(UInt(info.st_nlink))))
        }
        return .success(fd)
    }

    /// A folder, opened to lock it (`flock`) or to open files in it: never through a
    /// symbolic link as its last component.
    public static func openDirectory(_ path: String) -> Result<Int32, SharedFileError> {
        while true {
            let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 { return .success(fd) }
            let code = errno
            if code == EINTR { continue }
            var info = stat()
            if lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
                return .failure(SharedFileError(path: path, problem: .notDirectory(kind(of: info.st_mode))))
            }
            return .failure(
                SharedFileError(
                    path: path,
                    problem: code == ENOENT ? .missing : .system(SystemError("open", code: code))
                )
            )
        }
    }

    /// The whole file, if it is at most `limit` bytes.
    public static func read(_ path: String, limit: Int) throws(SharedFileError) -> [UInt8] {
        let fd: Int32
        switch open(path, access: .readOnly) {
        case .success(let opened): fd = opened
        case .failure(let error): throw error
        }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, Int(info.st_size) > limit {
            throw SharedFileError(path: path, problem: .tooLarge(limit: limit))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: min(limit + 1, 16 * 1024))
        while true {
            let count = retryingOnInterrupt { Glibc.read(fd, &chunk, chunk.count) }
            if count < 0 {
                throw SharedFileError(path: path, problem: .system(SystemError("read")))
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { throw SharedFileError(path: path, problem: .tooLarge(limit: limit)) }
        }
    }

    /// Reads the file from its end backward, `chunkSize` bytes at a time, handing each
    /// chunk to `consume` (with whether it begins the file) until `consume` returns
    /// false, the start of the file, or `maximumBytes` read.
    public static func readBackward(
        _ fd: Int32,
        path: String,
        chunkSize: Int = 64 * 1024,
        maximumBytes: Int,
        _ consume: (_ chunk: ArraySlice<UInt8>, _ atStart: Bool) -> Bool
    ) -> SharedFileError? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return SharedFileError(path: path, problem: .system(SystemError("fstat"))) }
        var end = Int(info.st_size)
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        var total = 0
        while end > 0, total < maximumBytes {
            let start = max(0, end - chunkSize)
            var filled = 0
            while start + filled < end {
                let count = buffer.withUnsafeMutableBytes { raw in
                    retryingOnInterrupt {
                        pread(fd, raw.baseAddress! + filled, end - start - filled, off_t(start + filled))
                    }
                }
                if count < 0 {
                    return SharedFileError(path: path, problem: .system(SystemError("read")))
                }
                // The file shrank under us: what is there is all there is.
                if count == 0 { break }
                filled += count
            }
            total += end - start
            guard consume(buffer[0..<filled], start == 0), filled == end - start else { return nil }
            end = start
        }
        return nil
    }

    /// Replaces the file at `path` by a new one holding `bytes` with `mode`: written to a
    /// temporary file in the same folder (`mkstemp`), fsynced, renamed over `path`.
    /// Readers see the old file or the new one; whatever was at `path` (a link, a FIFO)
    /// is replaced, never followed.
    public static func replace(_ path: String, with bytes: [UInt8], mode: mode_t) -> SharedFileError? {
        switch StagedReplacement.stage(path, with: bytes, mode: mode) {
        case .success(let staged): staged.commit()
        case .failure(let failure): failure
        }
    }

    /// The prefix of `replace`'s temporary files.
    public static let temporaryPrefix = ".tmp-"

    /// Removes the temporary files that writers killed between `mkstemp` and `rename`
    /// left in `directory`: names starting with `.tmp-`, regular files (never a link:
    /// `fstatat` with `AT_SYMLINK_NOFOLLOW`, and `unlinkat` removes the name only),
    /// owned by this process's user, last modified more than `olderThan` ago (a live
    /// writer renames its file within milliseconds). Returns the names removed.
    public static func removeStaleTemporaries(
        in directory: String,
        olderThan age: Duration
    ) -> Result<[String], SharedFileError> {
        let fd: Int32
        switch openDirectory(directory) {
        case .success(let opened): fd = opened
        case .failure(let error): return .failure(error)
        }
        // fdopendir takes the descriptor it is given; entries are then checked against `fd`.
        let listing = dup(fd)
        guard listing >= 0, let stream = fdopendir(listing) else {
            let error = SharedFileError(path: directory, problem: .system(SystemError("fdopendir")))
            if listing >= 0 { close(listing) }
            close(fd)
            return .failure(error)
        }
        defer {
            closedir(stream)
            close(fd)
        }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let cutoff = Int64(now.tv_sec) - age.components.seconds
        let me = geteuid()
        var removed: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix(temporaryPrefix) else { continue }
            var info = stat()
            guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0,
                info.st_mode & S_IFMT == S_IFREG, info.st_uid == me,
                Int64(info.st_mtim.tv_sec) < cutoff
            else { continue }
            if unlinkat(fd, name, 0) == 0 { removed.append(name) }
        }
        return .success(removed)
    }

    /// Writes every byte (retrying short writes and EINTR).
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) -> SharedFileError? {
        Descriptor.writeAll(fd, bytes).map { SharedFileError(path: path, problem: .system($0)) }
    }

    /// "a FIFO", "a symbolic link"…, or nil for a regular file.
    static func kindIfNotRegular(_ mode: mode_t) -> String? {
        mode & S_IFMT == S_IFREG ? nil : kind(of: mode)
    }

    public static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a file"
        }
    }

    /// The error of a failed open, in words: what is there when it is not a regular file
    /// (O_NOFOLLOW on a link gives ELOOP; O_NONBLOCK on a FIFO without a reader, ENXIO).
    private static func classify(_ name: String, in directory: Int32, path: String, code: Int32) -> SharedFileError {
        var info = stat()
        if fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0, let kind = kindIfNotRegular(info.st_mode) {
            return SharedFileError(path: path, problem: .notRegular(kind))
        }
        return SharedFileError(
            path: path,
            problem: code == ENOENT ? .missing : .system(SystemError("open", code: code))
        )
    }
}
