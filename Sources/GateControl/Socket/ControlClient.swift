import GateCore
import GateSystem
import Logging
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// `gate open`'s side of the control socket (docs/CONTRACT.md#the-control-socket):
/// hands the opening to the daemon that answers on `control.sock` and proves itself
/// gate's daemon for this runtime folder, and follows it (`Follower`).
///
/// Nothing is written to a listener before it has proven itself: a member of the
/// folder's group can put a link, or a hard link to another root-owned socket, at
/// `control.sock`; such a listener is told nothing and the client opens by itself.
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
        return ControlTrust.trusts(peer.uid, ownUID: geteuid(), folderOwnerUID: owner, service: serviceUID)
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

    /// How long the client waits for the daemon's `hello`, which the daemon writes as
    /// it accepts: a listener that says nothing by then is not taken for gate's daemon
    /// (nothing was sent to it, so the client may open by itself).
    public static let helloTimeout = Duration.seconds(2)

    /// Hands `opening` to the daemon on `paths.controlSocket`, if one answers, is
    /// trusted and proves itself gate's daemon for this runtime folder; the wait for
    /// its result, once it may have started, is bounded by `config.openingLimit`.
    /// Without a socket this returns at once.
    public static func open(
        _ opening: ControlOpening,
        config: GateConfig,
        paths: RuntimePaths,
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
        return await handOver(opening, config: config, paths: paths, logger: logger, onStateChange: onStateChange)
    }

    /// The exchange blocks on its socket: it runs on a thread of its own.
    private static func handOver(
        _ opening: ControlOpening,
        config: GateConfig,
        paths: RuntimePaths,
        logger: Logger,
        onStateChange: @escaping @Sendable (GateState, AdapterKind?) -> Void
    ) async -> Handover {
        await withCheckedContinuation { continuation in
            let failure = OSThread.detach {
                continuation.resume(
                    returning: exchange(
                        opening,
                        config: config,
                        paths: paths,
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

    /// A connection to the runtime folder's daemon, once it has proven itself.
    struct Met {
        let fd: Int32
        let peer: PeerCredentials
        let daemon: ControlDaemon
        /// Holds whatever came after the `hello`.
        var reader: LineReader
    }

    /// Connecting to the control socket: gate's daemon, or why not.
    enum Meeting {
        case met(Met)
        case noSocket
        case notASocket(String)
        case nobodyAnswers(SystemError)
        /// A listener whose uid `gate open` does not hand openings to: told nothing.
        case untrusted(PeerCredentials)
        /// A trusted uid that did not prove itself gate's daemon for this folder; why.
        case notGate(PeerCredentials, String)
        /// The listener closed the connection before its first line (a daemon stopping
        /// with the connection still in its queue).
        case gone(PeerCredentials, String)
        case failed(String)
    }

    /// Connects to `control.sock` without following a link and reads the listener's
    /// first line: the kernel's credentials of the listener (`SO_PEERCRED`) must be
    /// trusted, and its `hello` must name gate, that same pid and uid, and this
    /// runtime folder. Nothing is written before; the caller owns `Met.fd`.
    static func meet(paths: RuntimePaths) -> Meeting {
        let path = paths.controlSocket
        let fd: Int32
        switch UnixStream.connectWithoutFollowing(path) {
        case .connected(let connected): fd = connected
        case .missing: return .noSocket
        case .notASocket(let kind): return .notASocket(kind)
        case .failed(let error): return .nobodyAnswers(error)
        }
        let peer: PeerCredentials
        switch PeerCredentials.of(fd) {
        case .success(let found): peer = found
        case .failure(let error):
            close(fd)
            return .failed("cannot tell who listens on \(path): \(error)")
        }
        guard trusts(peer, runtimeDirectory: paths.runtimeDirectory) else {
            close(fd)
            return .untrusted(peer)
        }
        // The same reader follows the opening: a result line can be long.
        var reader = LineReader(fd: fd, limit: 64 * 1024)
        let why: String
        switch reader.next(until: MonotonicClock.now() + helloTimeout) {
        case .line(let line):
            switch introduction(line, peer: peer, runtimeDirectory: paths.runtimeDirectory) {
            case .success(let daemon): return .met(Met(fd: fd, peer: peer, daemon: daemon, reader: reader))
            case .failure(let problem): why = problem.description
            }
        case .ended:
            close(fd)
            return .gone(peer, "it closed the connection before introducing itself")
        case .failed(let error):
            close(fd)
            return .gone(peer, "it closed the connection before introducing itself (\(error))")
        case .tooLong: why = "its first line is not gate's hello"
        case .timedOut: why = "it did not introduce itself within \(helloTimeout.humanReadable)"
        }
        close(fd)
        return .notGate(peer, why)
    }

    /// Why a peer's first line does not prove it gate's daemon for `runtimeDirectory`.
    struct Impostor: Error, CustomStringConvertible {
        let description: String
    }

    static func introduction(
        _ line: [UInt8],
        peer: PeerCredentials,
        runtimeDirectory: String
    ) -> Result<ControlDaemon, Impostor> {
        guard case .hello(let daemon)? = ControlReply.parse(line) else {
            return .failure(Impostor(description: "its first line is not gate's hello"))
        }
        guard daemon.pid == peer.pid, daemon.uid == peer.uid else {
            return .failure(
                Impostor(
                    description:
                        "it introduced itself as pid \(daemon.pid), uid \(daemon.uid), but the kernel says pid \(peer.pid), uid \(peer.uid)"
                )
            )
        }
        guard sameFolder(daemon.runtimeDirectory, runtimeDirectory) else {
            return .failure(
                Impostor(
                    description:
                        "it serves the runtime folder \(SafeText.escaped(daemon.runtimeDirectory)), not \(runtimeDirectory)"
                )
            )
        }
        return .success(daemon)
    }

    /// Whether two paths name the same folder (device and inode).
    static func sameFolder(_ one: String, _ other: String) -> Bool {
        var first = stat()
        var second = stat()
        guard stat(one, &first) == 0, stat(other, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    private static func exchange(
        _ opening: ControlOpening,
        config: GateConfig,
        paths: RuntimePaths,
        logger: Logger,
        onStateChange: @Sendable (GateState, AdapterKind?) -> Void
    ) -> Handover {
        let path = paths.controlSocket
        var met: Met
        switch meet(paths: paths) {
        case .met(let proven): met = proven
        case let other: return declining(other, path: path, logger: logger)
        }
        defer { close(met.fd) }
        var stamped = opening
        stamped.sent = MonotonicClock.now()
        let line = ControlRequest.open(stamped).json.serialized() + "\n"
        let bytes = Array(line.utf8)
        let sent = bytes.withUnsafeBytes {
            send(met.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        if sent <= 0 {
            // Not one byte left: the daemon cannot have started anything.
            return .openDirectly("cannot write to the daemon on \(path): \(SystemError("send"))")
        }
        logger.debug("opening handed to the daemon", metadata: ["socket": "\(path)", "daemon_pid": "\(met.peer.pid)"])
        var follower = Follower(
            peer: met.peer,
            start: stamped.sent,
            limit: config.openingLimit,
            planned: { plannedFirst(config: config, selection: opening.selection, logger: logger) },
            logger: logger
        )
        if sent < bytes.count {
            return follower.lost("could not be sent the whole request")
        }
        return follower.follow(&met.reader, path: path, onStateChange: onStateChange)
    }

    /// The proven daemon's `who` answer, or nil when it gives none in time.
    private static func askWho(_ met: inout Met) -> ControlDaemon? {
        let bytes = Array((ControlRequest.who.json.serialized() + "\n").utf8)
        guard Descriptor.writeAll(met.fd, bytes) == nil else { return nil }
        guard case .line(let line) = met.reader.next(until: MonotonicClock.now() + helloTimeout),
            case .who(let daemon)? = ControlReply.parse(line)
        else { return nil }
        return daemon
    }

    /// No proven daemon: the opening is the client's own, and the log says why.
    private static func declining(_ meeting: Meeting, path: String, logger: Logger) -> Handover {
        switch meeting {
        case .met:
            return .openDirectly("internal error: a daemon was met and not used")
        case .noSocket:
            return .openDirectly("no daemon: \(path) does not exist")
        case .notASocket(let kind):
            logger.warning("not handing the opening to a daemon: \(path) is \(kind), not a socket")
            return .openDirectly("\(path) is not a socket")
        case .nobodyAnswers(let error):
            logger.debug(
                "no daemon answers on the control socket; opening directly",
                metadata: ["socket": "\(path)", "error": "\(error)"]
            )
            return .openDirectly("no daemon answers on \(path): \(error)")
        case .untrusted(let peer):
            logger.warning(
                "not handing the opening to the process on \(path): it belongs to uid \(peer.uid), neither root, this account, the runtime folder's owner, nor the service's user \(ControlTrust.serviceUser); opening directly",
                metadata: ["peer_pid": "\(peer.pid)", "peer_uid": "\(peer.uid)"]
            )
            return .openDirectly("the listener on \(path) is not trusted (uid \(peer.uid))")
        case .notGate(let peer, let why):
            logger.warning(
                "not handing the opening to the process on \(path) (pid \(peer.pid), uid \(peer.uid)): it did not prove itself gate's daemon for this runtime folder: \(why); nothing was sent to it, opening directly"
            )
            return .openDirectly("the listener on \(path) is not gate's daemon: \(why)")
        case .gone(let peer, let why):
            // Nothing was sent: whatever it was, it started nothing for this opening.
            logger.info(
                "the daemon on \(path) (pid \(peer.pid)) went away before the request: \(why); opening directly"
            )
            return .openDirectly("the daemon on \(path) went away: \(why)")
        case .failed(let why):
            logger.warning("not handing the opening to the daemon: \(why)")
            return .openDirectly(why)
        }
    }

    /// The adapter an opening of this configuration tries first: what a lost daemon
    /// may have triggered with before it reported anything.
    static func plannedFirst(config: GateConfig, selection: AdapterSelection, logger: Logger) -> AdapterKind? {
        let udpLink = config.udp.flatMap { udp -> LinkVerdict? in
            guard selection != .mqtt, let ip = IPAddress(literal: udp.host) else { return nil }
            return LinkCheck.verdict(for: ip, interfaces: InterfaceTable.current, logger: logger)
        }
        return AdapterPlan.make(config: config, selection: selection, udpLink: udpLink).adapters.first?.kind
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

    /// Who serves `paths.controlSocket`, if it is one `gate open` trusts: its `hello`,
    /// checked as `gate open` checks it; waits at most `helloTimeout`. Nothing is
    /// written to the socket. Blocking: for commands that are not an opening
    /// (`gate doctor`).
    public static func who(paths: RuntimePaths) -> Answer {
        let path = paths.controlSocket
        switch meet(paths: paths) {
        case .met(var met):
            defer { close(met.fd) }
            // The hello is fixed at start; the `who` answer says what failed since.
            return .answered(askWho(&met) ?? met.daemon, peer: met.peer)
        case .noSocket:
            return .noSocket
        case .notASocket(let kind):
            return .failed("\(path) is \(kind), not a socket")
        case .nobodyAnswers(let error):
            return .nobodyAnswers(error)
        case .untrusted(let peer):
            return .untrusted(peer)
        case .notGate(let peer, let why):
            return .failed("the process on \(path) (pid \(peer.pid), uid \(peer.uid)) is not gate's daemon: \(why)")
        case .gone(let peer, let why):
            return .failed("the process on \(path) (pid \(peer.pid), uid \(peer.uid)): \(why)")
        case .failed(let why):
            return .failed(why)
        }
    }
}
