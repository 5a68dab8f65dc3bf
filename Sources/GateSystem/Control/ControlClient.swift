import GateCore
import Logging
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// `gate open`'s side of the control socket (SPEC §10): hands the opening to the
/// daemon that answers on `control.sock`, and follows it.
///
/// Never twice: once the request has left for a daemon, that daemon may have started
/// the opening, so nothing but its explicit `declined` lets the client open by itself.
/// A daemon that goes away or silent after that ends the opening with
/// `operationTimeout` (the relay may have cycled).
public enum ControlClient {
    public enum Handover: Sendable {
        /// No trusted daemon took the opening, and none can have started it: open
        /// directly. Why, for the log.
        case openDirectly(String)
        /// The daemon's result, or the timeout of a daemon lost after the request.
        case finished(OpeningResult)
    }

    /// Whether the peer may run openings for this account (`ControlTrust`): root, this
    /// account, the runtime folder's owner, or the system user `gate` that
    /// `gate.service` runs as.
    public static func trusts(_ peer: PeerCredentials, runtimeDirectory: String) -> Bool {
        var info = stat()
        let owner = stat(runtimeDirectory, &info) == 0 ? UInt32(info.st_uid) : nil
        return ControlTrust(ownUID: geteuid(), folderOwnerUID: owner, serviceUID: serviceUID()).trusts(peer.uid)
    }

    /// The uid of the system user `gate`, if this machine has one.
    static func serviceUID() -> UInt32? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(ControlTrust.serviceUser, &entry, &buffer, buffer.count, &result) == 0, result != nil else {
            return nil
        }
        return entry.pw_uid
    }

    /// Hands `opening` to the daemon on `paths.controlSocket`, if one answers and is
    /// trusted; `limit` bounds the wait for its result once it may have started.
    /// Without a socket this returns at once.
    public static func open(
        _ opening: ControlOpening,
        paths: RuntimePaths,
        limit: Duration,
        logger: Logger,
        onStateChange: @escaping @Sendable (GateState, AdapterKind?) -> Void
    ) async -> Handover {
        let path = paths.controlSocket
        var info = stat()
        guard lstat(path, &info) == 0 else { return .openDirectly("no daemon: \(path) does not exist") }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            logger.warning(
                "not handing the opening to a daemon: \(path) is \(SharedFile.kind(of: info.st_mode)), not a socket"
            )
            return .openDirectly("\(path) is not a socket")
        }
        return await handOver(
            opening,
            path: path,
            paths: paths,
            limit: limit,
            logger: logger,
            onStateChange: onStateChange
        )
    }

    /// Apart from `open`, which returns at once without a socket: the continuation's
    /// type needs `Never: Error`, which the Swift runtime looks up on first use by
    /// searching every conformance record of the binary; in `open` that was done at
    /// the start of every `gate open`, daemon or not.
    @inline(never)
    private static func handOver(
        _ opening: ControlOpening,
        path: String,
        paths: RuntimePaths,
        limit: Duration,
        logger: Logger,
        onStateChange: @escaping @Sendable (GateState, AdapterKind?) -> Void
    ) async -> Handover {
        await withCheckedContinuation { continuation in
            let failure = OSThread.detach {
                continuation.resume(
                    returning: exchange(
                        opening,
                        path: path,
                        paths: paths,
                        limit: limit,
                        logger: logger,
                        onStateChange: onStateChange
                    )
                )
            }
            if let failure {
                // Nothing was sent: the client can do it itself.
                continuation.resume(
                    returning: .openDirectly(
                        "cannot start a thread to talk to the daemon: \(SystemError("pthread_create", code: failure))"
                    )
                )
            }
        }
    }

    private static func exchange(
        _ opening: ControlOpening,
        path: String,
        paths: RuntimePaths,
        limit: Duration,
        logger: Logger,
        onStateChange: @Sendable (GateState, AdapterKind?) -> Void
    ) -> Handover {
        let start = MonotonicClock.now()
        let fd: Int32
        switch UnixStream.connect(path) {
        case .success(let connected): fd = connected
        case .failure(let error):
            logger.debug(
                "no daemon answers on the control socket; opening directly",
                metadata: ["socket": "\(path)", "error": "\(error)"]
            )
            return .openDirectly("no daemon answers on \(path): \(error)")
        }
        defer { close(fd) }
        let peer: PeerCredentials
        switch PeerCredentials.of(fd) {
        case .success(let found): peer = found
        case .failure(let error):
            logger.warning("not handing the opening to the daemon: cannot tell who listens on \(path): \(error)")
            return .openDirectly("cannot tell who listens on \(path)")
        }
        guard trusts(peer, runtimeDirectory: paths.runtimeDirectory) else {
            logger.warning(
                "not handing the opening to the process on \(path): it belongs to uid \(peer.uid), neither root, this account, the runtime folder's owner, nor the service's user \(ControlTrust.serviceUser); opening directly",
                metadata: ["peer_pid": "\(peer.pid)", "peer_uid": "\(peer.uid)"]
            )
            return .openDirectly("the listener on \(path) is not trusted (uid \(peer.uid))")
        }

        let line = ControlRequest.open(opening).json.serialized() + "\n"
        let bytes = Array(line.utf8)
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        if sent <= 0 {
            // Not one byte left: the daemon cannot have started anything.
            return .openDirectly("cannot write to the daemon on \(path): \(SystemError("send"))")
        }
        logger.debug("opening handed to the daemon", metadata: ["socket": "\(path)", "daemon_pid": "\(peer.pid)"])
        func lost(_ why: String) -> Handover {
            logger.error(
                "the daemon (pid \(peer.pid)) that took this opening \(why); not triggering again: the relay may have cycled"
            )
            return .finished(
                OpeningResult(
                    error: .operationTimeout,
                    adapter: nil,
                    duration: MonotonicClock.now().duration(since: start),
                    attempts: [],
                    explanation:
                        "the opening was handed to the daemon (pid \(peer.pid)), which \(why); the relay may have cycled"
                )
            )
        }
        if sent < bytes.count {
            return lost("could not be sent the whole request")
        }

        var reader = LineReader(fd: fd, limit: 64 * 1024)
        let deadline = start + limit
        var accepted = false
        while true {
            switch reader.next(until: deadline) {
            case .line(let line):
                switch ControlReply.parse(line) {
                case .declined(let reason)? where !accepted:
                    logger.info("the daemon declined the opening; opening directly", metadata: ["reason": "\(reason)"])
                    return .openDirectly("the daemon declined: \(reason)")
                case .accepted?:
                    accepted = true
                case .state(let state, let adapter)?:
                    onStateChange(state, adapter)
                case .result(let result)?:
                    return .finished(result)
                case .error(let message)? where !accepted:
                    // The daemon read no opening in the request: it started nothing.
                    return .finished(
                        OpeningResult(
                            error: .allAdaptersFailed,
                            adapter: nil,
                            duration: MonotonicClock.now().duration(since: start),
                            attempts: [],
                            explanation:
                                "the daemon (pid \(peer.pid)) refused the request: \(message); nothing was sent"
                        )
                    )
                case .declined?, .error?, .who?, nil:
                    return lost("answered outside the protocol")
                }
            case .ended:
                return lost("closed the connection before the result")
            case .tooLong:
                return lost("sent a line longer than the protocol allows")
            case .timedOut:
                return lost("gave no result within \(limit.humanReadable)")
            case .failed(let error) where error.code == ECONNRESET && !accepted:
                // A Unix stream socket is reset only when its peer goes away with
                // data it never read, or never took the connection off the listening
                // socket's queue (a daemon stopping between our connect and its
                // accept): our request, the only thing we send, was not read, so
                // nothing was started for it, now or later.
                logger.info(
                    "the daemon (pid \(peer.pid)) stopped before reading the request; opening directly",
                    metadata: ["socket": "\(path)"]
                )
                return .openDirectly("the daemon on \(path) stopped before reading the request (\(error))")
            case .failed(let error):
                return lost("could not be read from (\(error))")
            }
        }
    }

    /// What `gate doctor` says about the runtime folder's daemon.
    public enum Answer: Sendable {
        case noSocket
        case nobodyAnswers(SystemError)
        case answered(ControlDaemon, peer: PeerCredentials)
        /// A listener `gate open` would not hand openings to: not asked anything.
        case untrusted(PeerCredentials)
        case failed(String)
    }

    /// Asks the daemon on `paths.controlSocket` who it is, if it is one `gate open`
    /// trusts; waits at most `timeout`. Blocking: for commands that are not an
    /// opening (`gate doctor`).
    public static func who(paths: RuntimePaths, timeout: Duration = .seconds(2)) -> Answer {
        let path = paths.controlSocket
        var info = stat()
        guard lstat(path, &info) == 0 else { return .noSocket }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            return .failed("\(path) is \(SharedFile.kind(of: info.st_mode)), not a socket")
        }
        let fd: Int32
        switch UnixStream.connect(path) {
        case .success(let connected): fd = connected
        case .failure(let error): return .nobodyAnswers(error)
        }
        defer { close(fd) }
        let peer: PeerCredentials
        switch PeerCredentials.of(fd) {
        case .success(let found): peer = found
        case .failure(let error): return .failed("cannot tell who listens on \(path): \(error)")
        }
        guard trusts(peer, runtimeDirectory: paths.runtimeDirectory) else { return .untrusted(peer) }
        guard UnixStream.send(fd, line: ControlRequest.who.json.serialized()) else {
            return .failed("cannot write to \(path): \(SystemError("send"))")
        }
        var reader = LineReader(fd: fd, limit: 64 * 1024)
        switch reader.next(until: MonotonicClock.now() + timeout) {
        case .line(let line):
            guard case .who(let daemon)? = ControlReply.parse(line) else {
                return .failed(
                    "the process on \(path) (pid \(peer.pid), uid \(peer.uid)) answered outside the protocol"
                )
            }
            return .answered(daemon, peer: peer)
        case .ended, .tooLong:
            return .failed("the process on \(path) (pid \(peer.pid), uid \(peer.uid)) answered outside the protocol")
        case .timedOut:
            return .failed(
                "the process on \(path) (pid \(peer.pid), uid \(peer.uid)) did not answer within \(timeout.humanReadable)"
            )
        case .failed(let error):
            return .failed("cannot read from \(path): \(error)")
        }
    }
}
