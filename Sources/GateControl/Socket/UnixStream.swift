import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// The Unix stream sockets of the control socket: the address, connecting, and
/// writing and reading lines without ever blocking a thread of Swift's pool.
public enum UnixStream {
    /// A path as a `sockaddr_un`, or nil when it does not fit (108 bytes with its NUL).
    static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return address
    }

    /// A new non-blocking, close-on-exec stream socket.
    static func makeSocket() -> Result<Int32, SystemError> {
        let fd = socket(
            AF_UNIX,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
            0
        )
        return fd >= 0 ? .success(fd) : .failure(SystemError("socket(AF_UNIX)"))
    }

    /// Connects to the socket at `path` without waiting: a Unix socket's connect
    /// either succeeds at once or fails (`ECONNREFUSED` when nobody listens,
    /// `EAGAIN` when the listener's queue is full). The caller owns the descriptor.
    public static func connect(_ path: String) -> Result<Int32, SystemError> {
        guard var address = address(path) else { return .failure(SystemError("connect", code: ENAMETOOLONG)) }
        let fd: Int32
        switch makeSocket() {
        case .success(let made): fd = made
        case .failure(let error): return .failure(error)
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                retryingOnInterrupt { Glibc.connect(fd, target, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        if status == 0 { return .success(fd) }
        let error = SystemError("connect")
        close(fd)
        return .failure(error)
    }

    /// What is at a control socket's path, connected to without following a link.
    public enum Pinned: Sendable {
        case connected(Int32)
        case missing
        /// A link, a file, a folder…: `SharedFile.kind` words.
        case notASocket(String)
        case failed(SystemError)
    }

    /// Connects to the socket named `path` itself, never to what a link there points
    /// to: connect(2) follows links, and a member of the runtime folder's group can
    /// exchange the name with a link between a check and the connect. So the name is
    /// opened `O_PATH | O_NOFOLLOW` (a link is opened as the link), checked to be a
    /// socket with `fstat`, and that very inode is connected to through
    /// `/proc/self/fd/N`, whatever the name holds by then.
    public static func connectWithoutFollowing(_ path: String) -> Pinned {
        let pinned = Glibc.open(path, Self.openPath | O_NOFOLLOW | O_CLOEXEC)
        guard pinned >= 0 else {
            return errno == ENOENT ? .missing : .failed(SystemError("open(O_PATH)"))
        }
        defer { close(pinned) }
        var info = stat()
        guard fstat(pinned, &info) == 0 else { return .failed(SystemError("fstat")) }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .notASocket(SharedFile.kind(of: info.st_mode)) }
        switch connect("/proc/self/fd/\(pinned)") {
        case .success(let fd): return .connected(fd)
        case .failure(let error): return .failed(error)
        }
    }

    /// `O_PATH` (Glibc shows it only with _GNU_SOURCE).
    static let openPath: Int32 = 0o10_000_000

    /// Whether the peer of a connected stream socket has closed its end or shut down
    /// its writing (`POLLRDHUP`, which Glibc shows only with _GNU_SOURCE), without
    /// waiting and without reading anything.
    static func peerHungUp(_ fd: Int32) -> Bool {
        let readHangUp: Int16 = 0x2000
        var entry = pollfd(fd: fd, events: readHangUp, revents: 0)
        // A poll that fails cannot tell: taken as gone, so that no trigger leaves unseen.
        guard retryingOnInterrupt({ Glibc.poll(&entry, 1, 0) }) >= 0 else { return true }
        return entry.revents & (readHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0
    }

    /// Writes `line` and a newline without blocking: false when not all of it could
    /// be written (the peer went away, or stopped reading and its buffer is full).
    @discardableResult
    public static func send(_ fd: Int32, line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                retryingOnInterrupt {
                    Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
            }
            if sent < 0 { return false }
            offset += sent
        }
        return true
    }
}
