import GateCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Everything an opening leaves for others to see, from the lock taken at the
/// start to the history line at the end (docs/CONTRACT.md#cooldown, docs/CONTRACT.md#runtime-files).
///
/// Holding one of these means holding the opening lock, until `finished` (or until
/// the recorder is freed, or the process dies).
public final class OpeningRecorder: Sendable {
    public enum Refusal: Error, Sendable {
        /// Another opener holds the lock.
        case inProgress(LockRecord?)
        /// The cooldown after the last cycle is still running.
        case cooldown(left: Duration)
        /// The runtime folder or the lock cannot be used.
        case unavailable(String)

        public var message: String {
            switch self {
            case .inProgress(let holder) where holder?.source == "elsewhere":
                // The daemon holds the lock while the status topic shows another client's cycle.
                return
                    "the relay is active: another client's cycle (seen by gate daemon on the status topic); "
                    + "nothing was sent: try again once it has ended"
            case .inProgress(let holder):
                return
                    "another opening is in progress: \(holder?.holderDescription ?? "another process"); "
                    + "nothing was sent: try again once it has ended"
            case .cooldown(let left):
                let tenths = (left.milliseconds + 99) / 100
                return
                    "cooldown after the last relay cycle: \(tenths / 10).\(tenths % 10) s left; nothing was sent: "
                    + "try again then, or use --force to skip the cooldown"
            case .unavailable(let why):
                return why
            }
        }
    }

    let paths: RuntimePaths
    let lock: OpeningLock
    let source: String
    let pid: Int32
    /// Whose opening the history records: the requester, or this process's user.
    let uid: UInt32
    let resetDelay: Double
    let logger: Logger
    /// The last finished opening before this one, shown until this one finishes.
    let previousLast: StatusRecord.Last?
    /// When this opening took the lock: its history line's duration counts from here, so
    /// that the line's time minus its duration is when the opening began, however long
    /// it took to conclude after its decisive event (a paused process, a watch's sync).
    private let began = MonotonicClock.now()

    private init(
        paths: RuntimePaths,
        lock: OpeningLock,
        source: String,
        pid: Int32,
        uid: UInt32,
        resetDelay: Double,
        logger: Logger
    ) {
        self.paths = paths
        self.lock = lock
        self.source = source
        self.pid = pid
        self.uid = uid
        self.resetDelay = resetDelay
        self.logger = logger
        switch StatusFile.load(paths.statusFile) {
        case .success(let record):
            self.previousLast = record?.last
        case .failure(let error):
            // Replaced by this opening's first write; the opening goes on.
            logger.warning("cannot read the status file", metadata: ["error": "\(error)"])
            self.previousLast = nil
        }
    }

    /// Takes the lock and checks the cooldown (unless `force`; the lock is never skipped).
    /// `requester`: the uid of the process that asked, when not this one's (a control
    /// socket client), for the history.

    public static func begin(
        paths: RuntimePaths,
        source: String,
        runtime: RuntimeConfig,
        force: Bool,
        requester: UInt32? = nil,
        logger: Logger
    ) throws(Refusal) -> OpeningRecorder {
        if case .failure(let error) = paths.prepare() {
            throw .unavailable(error.message)
        }
        let pid = getpid()
        let acquisition: OpeningLock.Acquisition
        switch OpeningLock.acquire(path: paths.lockFile, pid: pid, source: source, since: WallClock.iso8601()) {
        case .success(let result): acquisition = result
        case .failure(let error): throw .unavailable("cannot take the opening lock: \(error)")
        }
        switch acquisition {
        case .held(let holder):
            throw .inProgress(holder)
        case .acquired(let lock):
            let lastEnd = lock.previous?.cooldownStart.map(MonotonicInstant.init(nanoseconds:))
            let verdict = Cooldown.check(
                lastEnd: lastEnd,
                now: MonotonicClock.now(),
                cooldown: .seconds(fromConfig: runtime.cooldown)
            )
            switch verdict {
            case .wait(let left) where !force:
                throw .cooldown(left: left)
            case .wait(let left):
                logger.notice("cooldown skipped with --force", metadata: ["left_ms": "\(left.milliseconds)"])
            case .clear:
                break
            }
            return OpeningRecorder(
                paths: paths,
                lock: lock,
                source: source,
                pid: pid,
                uid: requester ?? getuid(),
                resetDelay: runtime.resetDelay,
                logger: logger
            )
        }
    }

    /// Called just before a trigger is sent (`TriggerPermit`), from the sending thread.
    public func recordTrigger(at instant: MonotonicInstant) {
        lock.recordTrigger(at: instant)
    }

    /// Writes the in-progress states; the final one is written by `finished`.
    public func stateChanged(_ state: GateState, adapter: AdapterKind?) {
        switch state {
        case .triggering, .waitingForRelayClose:
            write(
                StatusRecord(
                    state: state,
                    since: WallClock.iso8601(),
                    source: source,
                    pid: pid,
                    adapter: adapter?.rawValue,
                    resetAt: nil,
                    last: previousLast
                )
            )
        case .ready, .timeout, .error:
            break
        }
    }

    /// Final status, history line and, when a trigger may have left, the cooldown's start.
    /// - Parameters:
    ///   - resetAfter: how long `timeout`/`error` is shown (the machine's reset delay).
    ///   - history: false to leave the history alone (the daemon's repeated unanswered
    ///     `1`s on the status topic: one line, not one per message).
    ///   - cooldownFrom: when the cooldown starts, if not now (an unanswered `1`: the
    ///     relay cycled, if at all, when it was published).
    public func finished(
        _ result: OpeningResult,
        resetAfter: Duration? = nil,
        history: Bool = true,
        cooldownFrom: MonotonicInstant? = nil
    ) {
        let nowNs = WallClock.nowNanoseconds()
        // Read with the line's time, before the status file's write: the line's time minus
        // its duration is when the opening began, however long the fsync takes.
        let lasted = max(result.duration, MonotonicClock.now().duration(since: began))
        let now = WallClock.iso8601(nanoseconds: nowNs)
        let last = StatusRecord.Last(result: result, finishedAt: now, source: source)
        let record: StatusRecord
        switch result.outcome {
        case .success:
            record = StatusRecord(
                state: .ready,
                since: now,
                source: source,
                pid: pid,
                adapter: result.adapter?.rawValue,
                resetAt: nil,
                last: last
            )
        case .timeout, .error:
            let resetAt = WallClock.iso8601(
                nanoseconds: nowNs + (resetAfter ?? Duration.seconds(fromConfig: resetDelay)).nanosecondsClamped
            )
            record = StatusRecord(
                state: result.outcome == .timeout ? .timeout : .error,
                since: now,
                source: source,
                pid: pid,
                adapter: result.adapter?.rawValue,
                resetAt: resetAt,
                last: last
            )
        }
        write(record)
        let entry = HistoryLog.Entry(
            at: now,
            source: source,
            uid: uid,
            adapter: result.adapter?.rawValue,
            outcome: result.outcome.rawValue,
            error: result.error?.rawValue,
            durationMs: lasted.milliseconds
        )
        if history, let failure = HistoryLog.append(entry, to: paths.historyFile) {
            logger.warning("cannot write the history", metadata: ["error": "\(failure)"])
        }
        // Any trigger that left may have reached the ESP32: the cooldown protects a toggle gate.
        // (`adapter` names the adapter that saw the relay answer, or whose trigger went
        // unanswered; the daemon's `elsewhere` cycles sent nothing but cycled the relay.)
        if result.adapter != nil || result.attempts.contains(where: \.triggerSent) {
            lock.recordEnd(at: cooldownFrom ?? MonotonicClock.now())
        }
        lock.release()
    }

    private func write(_ record: StatusRecord) {
        if let failure = StatusFile.write(record, to: paths.statusFile) {
            // The lock is what keeps openings apart; a status that cannot be written only
            // leaves widgets behind, so the opening goes on.
            logger.warning("cannot write the status file", metadata: ["error": "\(failure)"])
        }
    }
}
