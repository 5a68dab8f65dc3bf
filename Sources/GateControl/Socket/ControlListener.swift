import GateCore
import GateSystem
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's listening control socket (`control.sock` in the runtime folder, SPEC
/// §10). One thread accepts connections and reads each one's request line, bounded
/// in length and time; each request is handed over as a `ControlConnection`.
///
/// The runtime folder is shared with group `gate` (docs/CONTRACT.md#shared-folders): the socket replaces only
/// a socket nobody answers on, never a link or a file, and never another daemon's. A member
/// of the group can remove or replace the name, too: the listener watches the folder and
/// stops (`requests` ends, `endReason` says why) when the name no longer holds its socket,
/// so that the daemon reports it and listens again instead of serving a name nobody reaches.
public final class ControlListener: Sendable {
    public enum Setup: Sendable {
        case listening(ControlListener)
        /// Another daemon answers there (its credentials, when the kernel gave them).
        case occupied(PeerCredentials?)
    }

    public let path: String
    public let requests: AsyncStream<ControlConnection>
    /// Whether a stale socket (nobody answering) was removed first.
    public let replacedStale: Bool
    private let wake: WakeSignal
    private let ending = Mutex<String?>(nil)

    /// Why `requests` ended by itself (the socket's name was removed or replaced); nil
    /// while it runs and after `stop`.
    public var endReason: String? { ending.withLock { $0 } }

    /// A request line must come this soon after connecting: a client writes it at once.
    static let requestTimeout = Duration.seconds(2)
    /// Connections whose request is still being read; more wait in the kernel's queue.
    static let maximumPending = 16

    private init(path: String, requests: AsyncStream<ControlConnection>, replacedStale: Bool, wake: WakeSignal) {
        self.path = path
        self.requests = requests
        self.replacedStale = replacedStale
        self.wake = wake
    }

    /// Listens on `path`, mode 0660 (the folder's group, as `lock`): connecting needs
    /// write permission on the socket. `banner` is what the daemon says of itself on
    /// every connection, first (`hello`).
    public static func open(path: String, banner: ControlDaemon) -> Result<Setup, ControlSocketError> {
        let replacedStale: Bool
        switch clearance(path) {
        case .success(.free(let stale)): replacedStale = stale
        case .success(.taken(let occupied)): return .success(occupied)
        case .failure(let error): return .failure(error)
        }
        // Made before the socket, so that no removal after it goes unseen. Without inotify
        // (its limits reached) the listener still serves; a removed name then goes
        // unnoticed until the daemon restarts.
        let watch = try? FolderWatch(directory: folder(of: path), names: [name(of: path)])
        let fd: Int32
        switch bound(path) {
        case .success(nil): return .success(.occupied(nil))
        case .success(.some(let made)): fd = made
        case .failure(let error): return .failure(error)
        }
        var boundInfo = stat()
        lstat(path, &boundInfo)
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            close(fd)
            unlink(path)
            return .failure(ControlSocketError(path: path, reason: SystemError("pipe", code: error.code).description))
        }
        let (requests, continuation) = AsyncStream.makeStream(of: ControlConnection.self, bufferingPolicy: .unbounded)
        let listener = ControlListener(path: path, requests: requests, replacedStale: replacedStale, wake: wake)
        let inode = (device: boundInfo.st_dev, inode: boundInfo.st_ino)
        let hello = ControlReply.hello(banner).json.serialized()
        let started = OSThread.detach {
            let reason = acceptLoop(
                listening: fd,
                hello: hello,
                wake: wake,
                socket: (path, inode, watch),
                continuation: continuation
            )
            listener.ending.withLock { $0 = reason }
            close(fd)
            // Only the socket this daemon made: another may have replaced it since.
            if stillNames(path, inode) { unlink(path) }
            continuation.finish()
        }
        if let code = started {
            close(fd)
            unlink(path)
            return .failure(
                ControlSocketError(path: path, reason: SystemError("pthread_create", code: code).description)
            )
        }
        return .success(.listening(listener))
    }

    /// What is at the socket's name before listening there.
    private enum Clearance {
        /// Nothing answers: free to bind (a stale socket left by a killed daemon removed).
        case free(replacedStale: Bool)
        /// A daemon answers there.
        case taken(Setup)
    }

    /// Never through a link: a member of the group could exchange the name with a link to
    /// another daemon's socket between a check and a connect.
    private static func clearance(_ path: String) -> Result<Clearance, ControlSocketError> {
        switch UnixStream.connectWithoutFollowing(path) {
        case .missing:
            return .success(.free(replacedStale: false))
        case .notASocket(let kind):
            return .failure(ControlSocketError(path: path, reason: "it is \(kind), not a socket; remove it"))
        case .connected(let fd):
            let peer = try? PeerCredentials.of(fd).get()
            close(fd)
            return .success(.taken(.occupied(peer)))
        case .failed(let error) where error.code == EAGAIN:
            // Its queue is full: someone listens there.
            return .success(.taken(.occupied(nil)))
        case .failed(let error) where error.code == ECONNREFUSED:
            // Left by a daemon that was killed: the name only (a socket is never followed).
            if unlink(path) != 0, errno != ENOENT {
                let reason = "cannot remove the stale socket: \(SystemError("unlink"))"
                return .failure(ControlSocketError(path: path, reason: reason))
            }
            return .success(.free(replacedStale: true))
        case .failed(let error):
            let reason = "cannot tell whether a daemon answers there: \(error)"
            return .failure(ControlSocketError(path: path, reason: reason))
        }
    }

    /// The listening socket bound at `path`, mode 0660; nil when another took the name first.
    private static func bound(_ path: String) -> Result<Int32?, ControlSocketError> {
        guard var address = UnixStream.address(path) else {
            return .failure(
                ControlSocketError(path: path, reason: "the path is longer than a Unix socket's address allows")
            )
        }
        let fd: Int32
        switch UnixStream.makeSocket() {
        case .success(let made): fd = made
        case .failure(let error): return .failure(ControlSocketError(path: path, reason: error.description))
        }
        // bind(2) creates the socket with the umask applied and there is no fchmod for
        // it, and a chmod through the path could follow whatever a member of the group
        // put there in between: the mode comes from the umask, set around bind only.
        let previous = umask(0o117)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        let bindError = errno
        umask(previous)
        guard bound == 0 else {
            close(fd)
            if bindError == EADDRINUSE { return .success(nil) }
            return .failure(ControlSocketError(path: path, reason: SystemError("bind", code: bindError).description))
        }
        guard listen(fd, 16) == 0 else {
            let error = SystemError("listen")
            close(fd)
            unlink(path)
            return .failure(ControlSocketError(path: path, reason: error.description))
        }
        return .success(fd)
    }

    /// Stops accepting and removes the socket; requests already handed over go on.
    public func stop() {
        wake.signal()
    }

    private struct Pending {
        var reader: LineReader
        var peer: PeerCredentials
        var deadline: MonotonicInstant
    }

    /// Whether `path` still names the socket `inode` (device, inode), not following a link.
    private static func stillNames(_ path: String, _ inode: (device: dev_t, inode: ino_t)) -> Bool {
        var now = stat()
        return lstat(path, &now) == 0 && now.st_dev == inode.device && now.st_ino == inode.inode
    }

    private static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func name(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// Accepts until stopped (nil) or until `socket`'s name no longer holds it (why).
    private static func acceptLoop(
        listening: Int32,
        hello: String,
        wake: WakeSignal,
        socket: (path: String, inode: (device: dev_t, inode: ino_t), watch: FolderWatch?),
        continuation: AsyncStream<ControlConnection>.Continuation
    ) -> String? {
        var pending: [Int32: Pending] = [:]
        defer {
            // Nothing was started for these: their clients may open by themselves.
            let stopping = ControlReply.declined("the daemon is stopping").json.serialized()
            for fd in pending.keys {
                UnixStream.send(fd, line: stopping)
                close(fd)
            }
        }
        // Out of descriptors, a queued connection cannot be taken and keeps the listener
        // readable: it is left in the queue a while instead of polled in a busy loop.
        var pausedUntil: MonotonicInstant?
        while true {
            var entries = [
                pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: socket.watch?.fd ?? -1, events: Int16(POLLIN), revents: 0),
            ]
            if let until = pausedUntil, MonotonicClock.now() >= until { pausedUntil = nil }
            let accepting = pending.count < maximumPending && pausedUntil == nil
            if accepting {
                entries.append(pollfd(fd: listening, events: Int16(POLLIN), revents: 0))
            }
            let order = Array(pending.keys)
            entries += order.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let soonest = (pending.values.map(\.deadline) + [pausedUntil].compactMap { $0 }).min()
            guard case .success = Poll.wait(&entries, until: soonest?.nanoseconds) else { return nil }
            if entries[0].revents != 0 { return nil }
            if entries[1].revents != 0, socket.watch?.drain() == true, !stillNames(socket.path, socket.inode) {
                return "it was removed or replaced"
            }
            if accepting, entries[2].revents != 0 {
                switch accepted(listening, hello) {
                case .connection(let fd, let entry): pending[fd] = entry
                case .none: break
                case .outOfDescriptors: pausedUntil = MonotonicClock.now() + acceptPause
                }
            }
            // Each pending connection: its line, its end, or its time up.
            for fd in order {
                guard let entry = pending[fd] else { continue }
                pending[fd] = read(fd, entry, into: continuation)
            }
        }
    }

    /// What taking one connection off the queue gave.
    private enum Accepted {
        /// A connection greeted with `hello`, waiting for its request.
        case connection(Int32, Pending)
        /// None: it went away, its peer cannot be known, or another error.
        case none
        /// The process or the system has no descriptor left (EMFILE, ENFILE).
        case outOfDescriptors
    }

    /// How long the queue is left alone when no descriptor is left to accept with.
    static let acceptPause = Duration.milliseconds(100)

    private static func accepted(_ listening: Int32, _ hello: String) -> Accepted {
        // accept4 is hidden behind _GNU_SOURCE; the listener is non-blocking and
        // close-on-exec, and the accepted descriptor is made so at once.
        let fd = accept(listening, nil, nil)
        guard fd >= 0 else { return errno == EMFILE || errno == ENFILE ? .outOfDescriptors : .none }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        switch PeerCredentials.of(fd) {
        case .success(let peer) where UnixStream.send(fd, line: hello):
            // The client sends nothing before it has checked this line.
            let reader = LineReader(fd: fd, limit: ControlRequest.maximumLength)
            return .connection(fd, Pending(reader: reader, peer: peer, deadline: MonotonicClock.now() + requestTimeout))
        case .success, .failure:
            close(fd)
            return .none
        }
    }

    /// What a pending connection sent so far: its request handed on (nil), its end or its
    /// time up (closed, nil), or still waiting (the entry to keep).
    private static func read(
        _ fd: Int32,
        _ pending: Pending,
        into continuation: AsyncStream<ControlConnection>.Continuation
    ) -> Pending? {
        var entry = pending
        let now = MonotonicClock.now()
        let request: Result<ControlRequest, ControlRequestProblem>?
        switch entry.reader.next(until: now) {
        case .line(let line):
            request = ControlRequest.parse(line)
        case .tooLong:
            request = .failure(.tooLong(limit: ControlRequest.maximumLength))
        case .failed:
            request = nil
            entry.deadline = now
        case .ended(let rest):
            request = rest.isEmpty ? nil : ControlRequest.parse(rest)
            entry.deadline = now
        case .timedOut:
            request = now >= entry.deadline ? .failure(.incomplete) : nil
        }
        if let request {
            continuation.yield(ControlConnection(fd: fd, peer: entry.peer, request: request))
            return nil
        }
        if entry.deadline <= now {
            // Gone without a request, or unreadable: nothing to answer.
            close(fd)
            return nil
        }
        return entry
    }
}
