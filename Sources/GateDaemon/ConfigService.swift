import AsyncAlgorithms
import GateCore
import GateSystem
import Logging
import ServiceLifecycle

/// Reloads the configuration on SIGHUP and when its file changes (docs/CONTRACT.md#gate-daemon):
/// validated first; on error the running configuration stays and the log says
/// why; on success an audit line names the changed keys (never a value).
struct ConfigService: Service, CustomStringConvertible {
    var description: String { "config-reload" }
    let context: DaemonContext
    /// SIGHUP, trapped by `Daemon.run` before the group starts: a trap set up here would
    /// race `READY=1` (sent by another service), and a SIGHUP in between was lost (ignored
    /// by the early `SIG_IGN`) or, without it, ended the daemon. Subscribed by each run.
    let hangups: HangupSignal

    /// File events come in bursts (create, write, close, rename): they are let
    /// settle this long, then the file is read once.
    static let settle = Duration.milliseconds(100)

    enum Trigger: Sendable {
        case hangup
        case fileChanged
        /// A missing configuration folder is looked for again.
        case rearm
        /// The service runs again after a failure: an edit made while it was down came
        /// with no event to a watch.
        case restart
    }

    func run() async {
        let hangups = self.hangups.subscribe().map { Trigger.hangup }
        // The watches' events and the looks again for a missing folder.
        let (own, continuation) = AsyncStream.makeStream(of: Trigger.self, bufferingPolicy: .bufferingNewest(4))
        // The link itself and, for a symlinked file (a config kept in a repository, say),
        // its target: an edit of the target makes no event in the link's folder.
        var watches = Watches(inputs: continuation)
        await withDiscardingTaskGroup { children in
            watches.rearm(for: context.configPath, logger: context.logger, children: &children)
            // Read once now on a restart, quiet when the file is unchanged (a first run's
            // configuration was read by the daemon's start just before).
            if SupervisedService.isRestart { reload(because: .restart) }
            for await trigger in merge(hangups, own).cancelOnGracefulShutdown() {
                if case .fileChanged = trigger {
                    try? await Task.sleep(for: Self.settle)
                }
                if case .rearm = trigger { watches.retryPending = false }
                // Before reading: a replaced folder or a re-pointed link is watched anew first,
                // so that nothing written after this read goes unseen.
                let missing = watches.rearm(for: context.configPath, logger: context.logger, children: &children)
                // A folder still missing: nothing to read yet (the retry comes back).
                if case .rearm = trigger, missing { continue }
                reload(because: trigger)
            }
            watches.stop()
            children.cancelAll()
        }
    }

    /// How often a configuration folder that is missing is looked for again.
    static let rearmRetry = Duration.seconds(1)

    /// The folders watched for the configuration file, each with the folder it was when
    /// the watch was made (a watch follows its inode, not the path).
    struct Watches {
        struct Armed {
            let place: Place
            let identity: FolderIdentity
            let watch: FileChangeWatch
        }
        struct Place: Hashable {
            let folder: String
            let name: String
        }
        /// Where the watches' events and the retries go.
        let inputs: AsyncStream<Trigger>.Continuation
        private var armed: [Armed] = []
        /// Places last warned about, so that a missing folder is logged once.
        private var warned: Set<Place> = []
        /// A look again for a missing folder is on its way (`rearmRetry`).
        var retryPending = false

        init(inputs: AsyncStream<Trigger>.Continuation) {
            self.inputs = inputs
        }

        /// Re-makes the watches when the places or their folders changed, each forwarded by
        /// a child of the loop's group that ends with its watch; when a folder is missing,
        /// looks again a `rearmRetry` later. True when a folder is missing.
        @discardableResult
        mutating func rearm(for path: String, logger: Logger, children: inout DiscardingTaskGroup) -> Bool {
            let missing = remake(for: path, logger: logger, children: &children)
            if missing, !retryPending {
                retryPending = true
                children.addTimer(after: ConfigService.rearmRetry, .rearm, into: inputs)
            }
            return missing
        }

        private mutating func remake(for path: String, logger: Logger, children: inout DiscardingTaskGroup) -> Bool {
            let places = ConfigService.watchedPlaces(of: path).map { Place(folder: $0.folder, name: $0.name) }
            let wanted = places.map { ($0, FileChangeWatch.identity(of: $0.folder)) }
            let current = armed.map { ($0.place, Optional($0.identity)) }
            // A watch whose folder went away sees nothing more, even of a folder made again
            // at the path with the old inode number.
            if !armed.contains(where: { $0.watch.isGone }),
                wanted.elementsEqual(current, by: { $0.0 == $1.0 && $0.1 == $1.1 })
            {
                return false
            }
            let first = armed.isEmpty
            stop()
            var missing = false
            for (place, identity) in wanted {
                guard let identity else {
                    missing = true
                    if warned.insert(place).inserted {
                        logger.warning(
                            "configuration folder missing; watching for it",
                            metadata: ["folder": "\(place.folder)"]
                        )
                    }
                    continue
                }
                do {
                    let watch = try FileChangeWatch(directory: place.folder, names: [place.name])
                    children.addTask { [inputs] in
                        for await _ in watch.changes { inputs.yield(.fileChanged) }
                    }
                    armed.append(Armed(place: place, identity: identity, watch: watch))
                    warned.remove(place)
                } catch {
                    logger.warning(
                        "configuration file changes are not watched; reload with SIGHUP",
                        metadata: [
                            "file": "\(place.folder)/\(place.name)", "error": "\(error)",
                        ]
                    )
                }
            }
            if !first {
                logger.info(
                    "configuration watch re-armed",
                    metadata: ["folders": "\(armed.map(\.place.folder).joined(separator: ","))"]
                )
            }
            return missing
        }

        mutating func stop() {
            for entry in armed { entry.watch.stop() }
            armed = []
        }
    }

    private func reload(because trigger: Trigger) {
        let logger = context.logger
        let old = context.config
        let why: String
        switch trigger {
        case .hangup: why = "SIGHUP"
        case .fileChanged, .rearm: why = "file changed"  // .rearm: the file's folder came back
        case .restart: why = "restart"
        }
        switch ConfigLocator(explicitPath: context.configPath).load() {
        case .failure(let error):
            // A file event for a file that reads the same is not worth a word; a broken
            // file always is, whatever brought the daemon to read it.
            logger.error(
                "configuration not reloaded; keeping the running one",
                metadata: [
                    "file": "\(context.configPath)", "trigger": "\(why)", "error": "\(error.description)",
                ]
            )
            if trigger == .hangup {
                context.notify(["RELOADING=1", SystemdNotifier.monotonicUsecField()])
            }
            context.notify([
                "READY=1", "STATUS=configuration error in \(context.configPath); running the previous configuration",
            ])
        case .success(let (config, _)):
            let changes = config.changes(from: old)
            if changes.isEmpty {
                if trigger == .hangup {
                    context.notify(["RELOADING=1", SystemdNotifier.monotonicUsecField()])
                    logger.notice(
                        "\(GateConfig.auditLine(changes))",
                        metadata: ["file": "\(context.configPath)", "trigger": "\(why)"]
                    )
                    context.notify([
                        "READY=1", "STATUS=\(context.statusText(for: config))",
                    ])
                }
                return
            }
            context.notify(["RELOADING=1", SystemdNotifier.monotonicUsecField()])
            logger.notice(
                "\(GateConfig.auditLine(changes))",
                metadata: [
                    "file": "\(context.configPath)", "trigger": "\(why)",
                    "changed": "\(changes.map(\.description).joined(separator: ","))",
                ]
            )
            context.apply(config)
            context.notify(["READY=1", "STATUS=\(context.statusText(for: config))"])
        }
    }

    /// The configuration file's folder and name, and its symlink target's when it has one.
    static func watchedPlaces(of path: String) -> [(folder: String, name: String)] {
        var places = [split(path)]
        if let target = ConfigLocator.canonical(path) {
            let place = split(target)
            if place != places[0] { places.append(place) }
        }
        return places
    }

    static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let folder = String(path[..<slash])
        return (folder.isEmpty ? "/" : folder, String(path[path.index(after: slash)...]))
    }
}
