import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Reports changes to some files of one folder (a `FolderWatch` read on a thread of its
/// own), for the daemon's config reload, status keeper, Home Assistant sensor and
/// desktop notifications.
///
/// A change is only a nudge ("look again"): the stream keeps at most one pending,
/// so a burst of writes is one wake-up, and readers re-read the file themselves.
/// The folder itself moved or deleted is a nudge too: the owner should check whether
/// the path now names another folder and watch that one (`identity`).
public final class FileChangeWatch: Sendable {
    public let changes: AsyncStream<Void>
    private let wake: WakeSignal
    private let folder: FolderWatch

    /// - Parameter names: the file names in `directory` that count; others are ignored.
    public init(directory: String, names: Set<String>) throws(SystemError) {
        let folder = try FolderWatch(directory: directory, names: names)
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            throw SystemError("pipe", code: error.code)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { _ in wake.signal() }
        self.changes = stream
        self.wake = wake
        self.folder = folder
        let failure = OSThread.detach {
            Self.readLoop(folder, wake: wake, into: continuation)
            continuation.finish()
        }
        if let failure {
            continuation.finish()
            throw SystemError("pthread_create", code: failure)
        }
    }

    /// Which folder a path names now (`FolderWatch.identity`).
    public static func identity(of directory: String) -> FolderIdentity? {
        FolderWatch.identity(of: directory)
    }

    /// The folder was deleted or moved away: a folder at its path now is another one,
    /// whatever its identity (`FolderWatch.isGone`).
    public var isGone: Bool { folder.isGone }

    /// Ends the watching thread and the stream; safe from any thread, repeatedly.
    public func stop() {
        wake.signal()
    }

    private static func readLoop(
        _ folder: FolderWatch,
        wake: WakeSignal,
        into continuation: AsyncStream<Void>.Continuation
    ) {
        var fds = [
            pollfd(fd: folder.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            guard case .success = Poll.wait(&fds, until: nil) else { return }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { return }
            if folder.drain() { continuation.yield(()) }
        }
    }
}
