import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The one inotify watch of gate: some files of one folder, as a descriptor to poll and
/// a `drain` that says whether what came concerns them. The folder is watched rather
/// than the files: editors and `StatusFile` replace files by rename, and a watch on a
/// file would follow the old inode away.
///
/// The folder itself moved or deleted (`IN_MOVE_SELF`, `IN_DELETE_SELF`, then
/// `IN_IGNORED`: the watch is gone) concerns them too, as do lost events: the owner
/// looks again, and checks whether the path now names another folder (`identity`).
/// `FileChangeWatch` reads one on a thread for the daemon; `gate status --watch` polls
/// one beside its standard output.
public final class FolderWatch: Sendable {
    /// Readable when events are queued.
    public let fd: Int32
    private let names: Set<String>
    private let gone = Atomic(false)

    /// - Parameter names: the file names in `directory` that count; others are ignored.
    public init(directory: String, names: Set<String>) throws(SystemError) {
        // IN_CLOEXEC | IN_NONBLOCK (anonymous enum constants in <sys/inotify.h>).
        let fd = inotify_init1(Int32(O_CLOEXEC | O_NONBLOCK))
        guard fd >= 0 else { throw SystemError("inotify_init1") }
        let mask = UInt32(
            IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_ONLYDIR
                | IN_DELETE_SELF | IN_MOVE_SELF
        )
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let error = SystemError("inotify_add_watch \(directory)")
            close(fd)
            throw error
        }
        self.fd = fd
        self.names = names
    }

    deinit { close(fd) }

    /// Which folder a path names now (device and inode, following links), nil when
    /// there is none: a watch follows its inode, so a different answer than when the
    /// watch was made means the path was replaced.
    public static func identity(of directory: String) -> FolderIdentity? {
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return FolderIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Reads every queued event; true when one concerns the files (or the folder, or
    /// events were lost). False, too, when nothing was queued.
    public func drain() -> Bool {
        // Room for many events with names up to NAME_MAX.
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var concerned = false
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in
                retryingOnInterrupt { read(fd, raw.baseAddress, raw.count) }
            }
            guard count > 0 else { return concerned }
            if Self.matches(buffer[0..<count], names: names) { concerned = true }
            if Self.folderGone(buffer[0..<count]) { gone.store(true, ordering: .relaxed) }
        }
    }

    /// The watched folder was deleted or moved away: this watch sees nothing more, even
    /// when the path names a folder again, which may have the old one's inode number
    /// (tmpfs and ext4 reuse them at once): `identity` alone cannot tell.
    public var isGone: Bool { gone.load(ordering: .relaxed) }

    /// Whether the buffer holds `IN_DELETE_SELF`, `IN_MOVE_SELF` or `IN_IGNORED`.
    static func folderGone(_ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset + MemoryLayout<inotify_event>.size <= bytes.endIndex {
            let event = bytes[offset...].withUnsafeBytes { $0.loadUnaligned(as: inotify_event.self) }
            if event.mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 { return true }
            offset += MemoryLayout<inotify_event>.size + Int(event.len)
        }
        return false
    }

    /// Whether any event in the buffer names one of `names` (or lost events: overflow).
    static func matches(_ bytes: ArraySlice<UInt8>, names: Set<String>) -> Bool {
        let header = MemoryLayout<inotify_event>.size
        var offset = bytes.startIndex
        while offset + header <= bytes.endIndex {
            let (mask, length) = bytes[offset..<(offset + header)].withUnsafeBytes { raw -> (UInt32, Int) in
                let event = raw.loadUnaligned(as: inotify_event.self)
                return (event.mask, Int(event.len))
            }
            if mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 { return true }
            let nameBytes = bytes[(offset + header)..<min(offset + header + length, bytes.endIndex)]
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            if names.contains(name) { return true }
            offset += header + length
        }
        return false
    }
}
