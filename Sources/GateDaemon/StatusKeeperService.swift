import AsyncAlgorithms
import GateCore
import GateSystem
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Keeps `status.json` saying what readers would conclude anyway (docs/CONTRACT.md#the-status-file): a
/// `timeout`/`error` past its `reset_at` becomes `ready`, and a busy record whose
/// opener died (its flock is gone) becomes `ready` with `last.outcome =
/// "interrupted"`. A panel script that reads the file with `jq` instead of
/// `gate status` then never shows a stuck state either.
///
/// Rewrites are renamed into place under the opening lock, so they never race a live
/// opener, and fsynced before it is taken, so that no opener waits for the card; the
/// keeper wakes on changes of the runtime folder (inotify) and at `reset_at`, and
/// does nothing while nothing happens.
struct StatusKeeperService: Service, CustomStringConvertible {
    var description: String { "status-keeper" }
    let context: DaemonContext

    /// How often a busy record is checked for a dead opener: a killed opener's
    /// lock goes without a file event when another process keeps the file open.
    static let busyRecheck = Duration.seconds(1)

    enum Input: Sendable {
        /// The runtime folder changed (or the keeper starts): look at the file.
        case changed
        /// Look again at `at`, as the last look asked.
        case recheck(at: MonotonicInstant)
        case sweep
    }

    func run() async {
        var watch: FileChangeWatch?
        do {
            watch = try FileChangeWatch(directory: context.paths.runtimeDirectory, names: ["status.json", "lock"])
        } catch {
            context.logger.warning(
                "the status file is not watched; it is tidied at its reset times only",
                metadata: ["error": "\(error)"]
            )
        }
        defer { watch?.stop() }
        let changes = (watch?.changes ?? AsyncStream { $0.finish() }).map { Input.changed }
        // Temporary files of writers killed mid-write (SharedFile.replace), at start and
        // every `sweepInterval`, in both shared folders.
        sweepTemporaries()
        let sweeps = AsyncTimerSequence(interval: Self.sweepInterval, clock: .continuous).map { _ in Input.sweep }
        let (rechecks, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        continuation.yield(.changed)

        // The one look again asked for; a recheck for another instant is stale.
        var recheckAt: MonotonicInstant?
        await withDiscardingTaskGroup { timers in
            for await input in merge(changes, sweeps, rechecks).cancelOnGracefulShutdown() {
                switch input {
                case .sweep:
                    sweepTemporaries()
                    continue
                case .recheck(let at) where at != recheckAt:
                    continue
                case .changed, .recheck:
                    break
                }
                recheckAt = nil
                if let wait = tidy() {
                    let at = MonotonicClock.now() + wait
                    recheckAt = at
                    timers.addTimer(after: wait, .recheck(at: at), into: continuation)
                }
            }
            timers.cancelAll()
        }
    }

    static let sweepInterval = Duration.seconds(600)
    /// A writer renames its temporary file within milliseconds; one a minute old is a dead writer's.
    static let staleTemporaryAge = Duration.seconds(60)

    private func sweepTemporaries() {
        for directory in [context.paths.runtimeDirectory, context.paths.stateDirectory] {
            switch SharedFile.removeStaleTemporaries(in: directory, olderThan: Self.staleTemporaryAge) {
            case .success(let names) where !names.isEmpty:
                context.logger.notice(
                    "removed temporary files left by killed writers",
                    metadata: [
                        "folder": "\(directory)", "files": "\(names.map(SafeText.escaped).joined(separator: ","))",
                    ]
                )
            case .success:
                break
            case .failure(let error):
                context.logger.debug(
                    "temporary files not swept",
                    metadata: ["folder": "\(directory)", "error": "\(error)"]
                )
            }
        }
    }

    /// Brings the file in line with its effective record; returns when to look again.
    private func tidy() -> Duration? {
        let paths = context.paths
        let loaded: StatusRecord?
        switch StatusFile.load(paths.statusFile) {
        case .success(let record):
            loaded = record
        case .failure(let error):
            // A FIFO, a link…: replaced by a valid file (rename never follows it).
            context.logger.warning("the status file cannot be used; writing a new one", metadata: ["error": "\(error)"])
            loaded = nil
        }
        // After the read, as every reader does (`StatusFile.effective`).
        let now = WallClock.iso8601()
        guard let record = loaded else {
            // No file yet (a fresh boot), or one that holds no valid record: widgets get a
            // `ready` to show.
            rewrite(to: .initial(now: now), ifStill: nil)
            return nil
        }
        let held = OpeningLock.isHeld(path: paths.lockFile)
        let effective = record.effective(now: now, lockHeld: held)
        if effective != record {
            // Written as it will be when the lock is taken: free.
            rewrite(to: record.effective(now: WallClock.iso8601(), lockHeld: false), ifStill: record)
            return nil
        }
        switch record.state {
        case .timeout, .error:
            // At most a minute: the wall clock may be stepped while the keeper sleeps.
            return record.resetAt.flatMap { WallClock.duration(until: $0) }.map {
                min($0 + .milliseconds(5), .seconds(60))
            }
        case .triggering, .waitingForRelayClose:
            return Self.busyRecheck
        case .ready:
            return nil
        }
    }

    /// Puts `replacement` in place of the file if it still holds `seen` (nil: no valid
    /// record). The new file is written and fsynced first, without the lock; under the
    /// lock come only a read and a rename, so an opener never waits for the card, and one
    /// that meets the tidy waits for it instead of being refused (docs/CONTRACT.md#the-lock).
    /// Dropped when an opener holds the lock or the file changed meanwhile: its writer
    /// wrote what is true, and the change nudges the keeper again.
    private func rewrite(to replacement: StatusRecord, ifStill seen: StatusRecord?) {
        let paths = context.paths
        let staged: StagedReplacement
        switch StatusFile.stage(replacement, for: paths.statusFile) {
        case .success(let written): staged = written
        case .failure(let failure):
            context.logger.warning("cannot write the status file", metadata: ["error": "\(failure)"])
            return
        }
        let acquired = OpeningLock.acquire(
            path: paths.lockFile,
            pid: getpid(),
            source: OpeningLock.tidySource,
            since: WallClock.iso8601()
        )
        guard case .success(.acquired(let lock)) = acquired else {
            staged.discard()
            context.logger.debug("status file tidy dropped: an opener holds the lock")
            return
        }
        defer { lock.release() }
        guard StatusFile.read(paths.statusFile) == seen else {
            staged.discard()
            context.logger.debug("status file tidy dropped: the file changed meanwhile")
            return
        }
        if let failure = staged.commit() {
            context.logger.warning("cannot write the status file", metadata: ["error": "\(failure)"])
        } else {
            context.logger.debug(
                "status file tidied",
                metadata: [
                    "state": "\(replacement.state.rawValue)",
                    "outcome": "\(replacement.last?.outcome.rawValue ?? "none")",
                ]
            )
        }
    }
}
