import GateControl
import GateCore
import GateSystem
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The control socket (docs/CONTRACT.md#the-control-socket): `gate open` hands its opening to the daemon,
/// which runs it through the one pipeline (lock, cooldown, warm link) and streams
/// its states and result back; `gate doctor` asks who serves the runtime folder.
///
/// Openings are not queued: one asked while another runs gets the pipeline's
/// `operationInProgress`. Requests expire (docs/CONTRACT.md#the-control-socket): no
/// opening begins for a request more than 2 s old or whose client has hung up, and
/// no trigger leaves for a client that hung up before it; once a trigger left, the
/// opening goes on and is recorded whoever waits. On graceful shutdown the socket
/// goes away at once and openings in flight finish.
///
/// A socket that cannot be made (a file or a link in the way) or whose name was removed
/// or replaced under it fails this service: `run` throws, `SupervisedService` reports it
/// and runs it again with backoff, and the next run listens anew.
struct ControlService: Service, CustomStringConvertible {
    static let name = "control"
    var description: String { Self.name }

    let context: DaemonContext
    /// What listening before `READY=1` gave, for the first run.
    let firstListen: HandedOnce<Result<ControlListener?, ControlSocketError>>

    init(context: DaemonContext, firstListen: Result<ControlListener?, ControlSocketError>) {
        self.context = context
        self.firstListen = HandedOnce(firstListen)
    }

    /// Listens on the runtime folder's `control.sock`; nil when another daemon answers
    /// there (never taken from it: this one runs without it). Done before READY=1 for the
    /// first run, so that a `gate open` started once the daemon is ready finds the socket.
    static func listen(context: DaemonContext) -> Result<ControlListener?, ControlSocketError> {
        let logger = context.logger
        let path = context.paths.controlSocket
        let banner = ControlDaemon(
            pid: getpid(),
            uid: geteuid(),
            configPath: ConfigLocator.canonical(context.configPath) ?? context.configPath,
            runtimeDirectory: context.paths.runtimeDirectory
        )
        switch ControlListener.open(path: path, banner: banner) {
        case .success(.listening(let listener)):
            logger.info(
                "control socket listening",
                metadata: ["socket": "\(path)", "replaced_stale": "\(listener.replacedStale)"]
            )
            return .success(listener)
        case .success(.occupied(let peer)):
            logger.warning(
                "another daemon answers on the control socket; this one runs without it (openings by gate open go to the other)",
                metadata: [
                    "socket": "\(path)", "other_pid": "\(peer.map { "\($0.pid)" } ?? "unknown")",
                    "other_uid": "\(peer.map { "\($0.uid)" } ?? "unknown")",
                ]
            )
            return .success(nil)
        case .failure(let error):
            return .failure(error)
        }
    }

    func run() async throws {
        guard let listener = try (firstListen.take() ?? Self.listen(context: context)).get() else {
            try? await gracefulShutdown()
            return
        }
        await withDiscardingTaskGroup { group in
            await withGracefulShutdownHandler {
                for await connection in listener.requests {
                    let context = self.context
                    group.addTask { await Self.serve(connection, context: context) }
                }
            } onGracefulShutdown: {
                listener.stop()
            }
            // The group waits for the openings in flight.
        }
        listener.stop()
        if let reason = listener.endReason {
            throw ControlSocketError(path: listener.path, reason: reason)
        }
    }

    private static func serve(_ connection: ControlConnection, context: DaemonContext) async {
        var logger = context.logger
        logger[metadataKey: "opener_uid"] = "\(connection.peer.uid)"
        logger[metadataKey: "opener_pid"] = "\(connection.peer.pid)"
        switch connection.request {
        case .failure(let problem):
            logger.notice("control request refused: \(problem)")
            connection.send(.error(problem.description))
        case .success(.who):
            logger.debug("control request: who")
            connection.send(
                .who(
                    ControlDaemon(
                        pid: getpid(),
                        uid: geteuid(),
                        configPath: ConfigLocator.canonical(context.configPath) ?? context.configPath,
                        runtimeDirectory: context.paths.runtimeDirectory,
                        parts: context.partReports
                    )
                )
            )
        case .success(.open(let opening)):
            logger[metadataKey: "source"] = "\(opening.source)"
            if let refusal = refusal(of: opening, from: connection, context: context, logger: logger) {
                connection.send(.declined(refusal))
                return
            }
            // Written before anything starts: a client that never reads it can be told
            // nothing was started (the line is in its socket before the opening begins).
            guard connection.send(.accepted) else {
                logger.notice("opening declined: the client hung up before the opening began; nothing was started")
                return
            }
            logger.info(
                "opening handed over on the control socket",
                metadata: ["via": "\(opening.selection.rawValue)", "force": "\(opening.force)"]
            )
            let request = OpeningRequest(
                source: opening.source,
                selection: opening.selection,
                force: opening.force,
                requester: connection.peer.uid,
                openerGone: { connection.clientHungUp() }
            )
            let result = await context.open(request, logger: logger) {
                state,
                adapter in
                connection.send(.state(state, adapter))
            }
            if !connection.send(.result(result)) {
                logger.notice("the client that asked for the opening is gone; the opening was completed and recorded")
            }
            let metadata: Logger.Metadata = [
                "outcome": "\(result.outcome.rawValue)", "adapter": "\(result.adapter?.rawValue ?? "none")",
                "duration_ms": "\(result.duration.milliseconds)",
            ]
            switch result.error {
            case nil: logger.info("\(result.message)", metadata: metadata)
            case .operationInProgress: logger.notice("opening refused: \(result.message)", metadata: metadata)
            case .some: logger.error("\(result.message)", metadata: metadata)
            }
        }
    }

    /// Why this daemon does not begin `opening`, logged; nil when it may. Nothing was
    /// started in either case: the client may open by itself.
    private static func refusal(
        of opening: ControlOpening,
        from connection: ControlConnection,
        context: DaemonContext,
        logger: Logger
    ) -> String? {
        guard let own = ConfigLocator.canonical(context.configPath),
            ConfigLocator.canonical(opening.configPath) == own
        else {
            logger.notice(
                "opening declined: the client uses another configuration",
                metadata: ["client_config": "\(SafeText.escaped(opening.configPath))"]
            )
            return "another configuration: this daemon reads \(context.configPath)"
        }
        let reason: String
        if OpeningSource.daemonOwn.contains(opening.source) {
            reason =
                "source \(opening.source) is reserved to the daemon's own openers; a client opens with it by itself, under its own uid"
        } else if let expired = opening.expiry(at: MonotonicClock.now()) {
            reason = expired
        } else if connection.clientHungUp() {
            reason = "the client hung up before the opening began; nothing was started"
        } else {
            return nil
        }
        logger.notice("opening declined: \(reason)")
        return reason
    }
}
