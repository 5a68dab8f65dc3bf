import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Reports changes to some files of one folder (inotify), for the daemon's config
/// reload and status keeper. The folder is watched rather than the files: editors
/// and `StatusFile` replace files by rename, and a watch on a file would follow
/// the old inode away.
///
/// A change is only a nudge ("look again"): the stream keeps at most one pending,
/// so a burst of writes is one wake-up, and readers re-read the file themselves.
/// The folder itself moved or deleted (`IN_MOVE_SELF`, `IN_DELETE_SELF`, then
/// `IN_IGNORED`: the watch is gone) is a nudge too: the owner should check whether
/// the path now names another folder and watch that one (`identity`).
public final class FileChangeWatch: Sendable {
    public let changes: AsyncStream<Void>
    private let wake: WakeSignal

    /// - Parameter names: the file names in `directory` that count; others are ignored.
    public init(directory: String, names: Set<String>) throws(SystemError) {
        // IN_CLOEXEC | IN_NONBLOCK (anonymous enum constants in <sys/inotify.h>).
        let inotify = inotify_init1(Int32(O_CLOEXEC | O_NONBLOCK))
        guard inotify >= 0 else { throw SystemError("inotify_init1") }
        let mask = UInt32(
            IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_ONLYDIR
                | IN_DELETE_SELF | IN_MOVE_SELF
        )
        guard inotify_add_watch(inotify, directory, mask) >= 0 else {
            let error = SystemError("inotify_add_watch \(directory)")
            close(inotify)
            throw error
        }
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            close(inotify)
            throw SystemError("pipe", code: error.code)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { _ in wake.signal() }
        self.changes = stream
        self.wake = wake
        let failure = OSThread.detach {
            Self.readLoop(inotify: inotify, wake: wake, names: names, into: continuation)
            close(inotify)
            continuation.finish()
        }
        if let failure {
            close(inotify)
            continuation.finish()
            throw SystemError("pthread_create", code: failure)
        }
    }

    /// Which folder a path names now (device and inode, following links), nil when
    /// there is none: a watch follows its inode, so a different answer than when the
    /// watch was made means the path was replaced.
    public static func identity(of directory: String) -> FolderIdentity? {
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return FolderIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Ends the watching thread and the stream; safe from any thread, repeatedly.
    public func stop() {
        wake.signal()
    }

    private static func readLoop(
        inotify: Int32,
        wake: WakeSignal,
        names: Set<String>,
        into continuation: AsyncStream<Void>.Continuation
    ) {
        var fds = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
        ]
        // Room for many events with names up to NAME_MAX.
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            guard case .success = Poll.wait(&fds, until: nil) else { return }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { return }
            let count = buffer.withUnsafeMutableBytes { raw in
                retryingOnInterrupt { read(inotify, raw.baseAddress, raw.count) }
            }
            if count < 0 {
                if errno == EAGAIN { continue }
                return
            }
            if matches(buffer[0..<count], names: names) { continuation.yield(()) }
        }
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
