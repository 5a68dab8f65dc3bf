#if canImport(Glibc)
import Glibc
#endif
import GateCore
import GateSystem
import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the configuration on SIGHUP and when its file changes (SPEC §3):
/// validated first; on error the running configuration stays and the log says
/// why; on success an audit line names the changed keys (never a value).
struct ConfigService: Service, CustomStringConvertible {
    var description: String { "config-reload" }
    let context: DaemonContext
    /// SIGHUP, trapped by `Daemon.run` before the group starts: a trap set up here would
    /// race `READY=1` (sent by another service), and a SIGHUP in between was lost (ignored
    /// by the early `SIG_IGN`) or, without it, ended the daemon.
    let hangups: UnixSignalsSequence

    /// File events come in bursts (create, write, close, rename): they are let
    /// settle this long, then the file is read once.
    static let settle = Duration.milliseconds(100)

    enum Trigger: Sendable {
        case hangup
        case fileChanged
    }

    func run() async {
        let logger = context.logger
        let (triggers, continuation) = AsyncStream.makeStream(of: Trigger.self, bufferingPolicy: .bufferingNewest(4))
        let hangups = Task { [signals = self.hangups] in
            for await _ in signals { continuation.yield(.hangup) }
        }
        // The link itself and, for a symlinked file (a config kept in a repository, say),
        // its target: an edit of the target makes no event in the link's folder.
        var watches: [FileChangeWatch] = []
        var fileEvents: [Task<Void, Never>] = []
        for place in Self.watchedPlaces(of: context.configPath) {
            do {
                let started = try FileChangeWatch(directory: place.folder, names: [place.name])
                watches.append(started)
                fileEvents.append(Task {
                    for await _ in started.changes { continuation.yield(.fileChanged) }
                })
            } catch {
                logger.warning("configuration file changes are not watched; reload with SIGHUP", metadata: [
                    "file": "\(place.folder)/\(place.name)", "error": "\(error)",
                ])
            }
        }
        defer {
            hangups.cancel()
            for task in fileEvents { task.cancel() }
            for watch in watches { watch.stop() }
        }

        for await trigger in triggers.cancelOnGracefulShutdown() {
            if case .fileChanged = trigger {
                try? await Task.sleep(for: Self.settle)
            }
            reload(because: trigger)
        }
    }

    private func reload(because trigger: Trigger) {
        let logger = context.logger
        let old = context.config
        let why = trigger == .hangup ? "SIGHUP" : "file changed"
        switch ConfigLocator(explicitPath: context.configPath).load() {
        case .failure(let error):
            // A file event for a file that reads the same is not worth a word; a broken
            // file always is, whatever brought the daemon to read it.
            logger.error("configuration not reloaded; keeping the running one", metadata: [
                "file": "\(context.configPath)", "trigger": "\(why)", "error": "\(error.description)",
            ])
            if trigger == .hangup {
                context.notify(["RELOADING=1", SystemdNotifier.monotonicUsecField()])
            }
            context.notify(["READY=1", "STATUS=configuration error in \(context.configPath); running the previous configuration"])
        case .success(let (config, _)):
            let changes = config.changes(from: old)
            if changes.isEmpty {
                if trigger == .hangup {
                    context.notify(["RELOADING=1", SystemdNotifier.monotonicUsecField()])
                    logger.notice("\(GateConfig.auditLine(changes))", metadata: ["file": "\(context.configPath)", "trigger": "\(why)"])
                    context.notify(["READY=1", "STATUS=\(DaemonStatus.text(for: config, button: context.buttonOrigin))"])
                }
                return
            }
            context.notify(["RELOADING=1", SystemdNotifier.monotonicUsecField()])
            logger.notice("\(GateConfig.auditLine(changes))", metadata: [
                "file": "\(context.configPath)", "trigger": "\(why)",
                "changed": "\(changes.map(\.description).joined(separator: ","))",
            ])
            context.apply(config)
            context.notify(["READY=1", "STATUS=\(DaemonStatus.text(for: config, button: context.buttonOrigin))"])
        }
    }

    /// The configuration file's folder and name, and its symlink target's when it has one.
    static func watchedPlaces(of path: String) -> [(folder: String, name: String)] {
        var places = [split(path)]
        if let resolved = realpath(path, nil) {
            let target = String(cString: resolved)
            free(resolved)
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

/// The one-line `STATUS=` systemd shows under `systemctl status gate`.
enum DaemonStatus {
    static func text(for config: GateConfig, button: String?) -> String {
        var parts: [String] = [button.map { "button on \($0)" } ?? "no button"]
        if let udp = config.udp { parts.append("UDP \(udp.host):\(udp.port)") }
        if let mqtt = config.mqtt { parts.append("MQTT \(mqtt.host):\(mqtt.port)") }
        return "ready: " + parts.joined(separator: ", ")
    }
}
