import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// `gate status --watch`: the state at once, then one line per change, for as long
/// as someone reads it (docs/CONTRACT.md#gate-status).
///
/// Changes come from inotify on the runtime folder, not on `status.json`: the file
/// is replaced by rename, and a watch on the file would follow the old inode away.
/// Two changes make no inotify event and are caught by a timer instead: a
/// `timeout`/`error` reaching its `reset_at`, and an opener dying while busy (the flock
/// goes with it; a close of its lock file does make an event, but a long-lived holder
/// such as the daemon may keep the file open). Nothing is read while nothing happens.
public final class StatusWatcher {
    public enum End: Sendable, Equatable {
        /// stdout's reader went away (EPIPE or a hung-up pipe): the panel closed.
        case readerGone
        case failed(SystemError)
    }

    /// How often a busy record is checked for a dead opener, and how often a missing
    /// folder (or parent) is looked for again.
    static let recheckMilliseconds: Int32 = 1000

    let paths: RuntimePaths
    let render: (StatusRecord) -> String
    /// The runtime folder's watch and which folder it watches; while the folder is
    /// missing, its parent's (for the folder's name), to see it come back.
    private var folderWatch: (watch: FolderWatch, identity: FolderIdentity)?
    private var parentWatch: FolderWatch?
    private var lastLine: String?
    /// When the status file was first seen missing: a stable `since` for the initial
    /// record, so that a JSON watcher does not print a new line on every wake-up.
    private var missingSince: String?
    /// The status file's problem last said on stderr.
    private var lastProblem: SharedFileError?

    public init(paths: RuntimePaths, render: @escaping (StatusRecord) -> String) {
        self.paths = paths
        self.render = render
    }

    /// Blocks until the reader goes away (or standard output fails). Without inotify, it
    /// looks every second.
    public func run() -> End {
        // A closed pipe must come back as EPIPE, not kill the process with status 141.
        signal(SIGPIPE, SIG_IGN)
        Self.unblockTerminatingSignals()
        while true {
            watchFolder()
            switch current() {
            case .success(let record):
                lastProblem = nil
                let line = render(record)
                if line != lastLine {
                    if let end = emit(line) { return end }
                    lastLine = line
                }
                if let end = wait(milliseconds: wakeAfter(record)) { return end }
            case .failure(let problem):
                // Said once on stderr; the last line shown stays until the file is usable.
                if problem != lastProblem { Terminal.printError("gate: \(problem)") }
                lastProblem = problem
                if let end = wait(milliseconds: Self.recheckMilliseconds) { return end }
            }
        }
    }

    // MARK: state

    /// The effective record (docs/CONTRACT.md#the-status-file); ready when there is no status file; an error when
    /// the file cannot be used (a FIFO, a link…).
    private func current() -> Result<StatusRecord, SharedFileError> {
        let record: StatusRecord?
        switch StatusFile.load(paths.statusFile) {
        case .success(let loaded): record = loaded
        case .failure(let error): return .failure(error)
        }
        // After the read: a record written just before it must not begin after `now`
        // (that reads as a clock stepped back, and the failure as over).
        let now = WallClock.iso8601()
        guard let record else {
            if missingSince == nil { missingSince = now }
            return .success(.initial(now: missingSince ?? now))
        }
        missingSince = nil
        return .success(record.effective(now: now, lockHeld: OpeningLock.isHeld(path: paths.lockFile)))
    }

    /// The poll timeout in milliseconds: until `reset_at`; every second while busy, or
    /// while neither the folder nor its parent can be watched; else none (-1).
    private func wakeAfter(_ record: StatusRecord) -> Int32 {
        var timeout: Int32 = -1
        func atMost(_ milliseconds: Int32) {
            timeout = timeout < 0 ? milliseconds : min(timeout, milliseconds)
        }
        switch record.state {
        case .triggering, .waitingForRelayClose:
            atMost(Self.recheckMilliseconds)
        case .timeout, .error:
            // Without a reset time a failure stays as it is until the file changes.
            if let resetAt = record.resetAt.flatMap(StatusClock.epochMilliseconds) {
                let left = resetAt - WallClock.nowNanoseconds() / 1_000_000
                // A few milliseconds late, so that `now >= reset_at` holds on waking.
                atMost(Int32(clamping: max(1, left + 5)))
            }
        case .ready:
            break
        }
        if folderWatch == nil && parentWatch == nil { atMost(Self.recheckMilliseconds) }
        return timeout
    }

    // MARK: output

    /// Writes the line with write(2): nothing waits in a buffer while the panel does.
    private func emit(_ line: String) -> End? {
        guard let failure = Descriptor.writeAll(STDOUT_FILENO, Array((line + "\n").utf8)) else { return nil }
        return failure.code == EPIPE
            ? .readerGone : .failed(SystemError("write to standard output", code: failure.code))
    }

    // MARK: inotify

    /// Watches the runtime folder; while it does not exist, its parent, to see it come
    /// back (or, with no parent either, the one-second timer). A folder watched that is
    /// no longer the one the path names (removed, renamed) is let go first.
    private func watchFolder() {
        let folder = paths.runtimeDirectory
        let identity = FolderWatch.identity(of: folder)
        if let watched = folderWatch, watched.identity == identity, !watched.watch.isGone { return }
        folderWatch = nil
        if let identity, let watch = try? FolderWatch(directory: folder, names: ["status.json", "lock"]) {
            folderWatch = (watch, identity)
            parentWatch = nil
            return
        }
        if parentWatch == nil {
            parentWatch = try? FolderWatch(directory: Self.parent(of: folder), names: [Self.lastComponent(of: folder)])
            // The folder may have appeared between the two calls.
            if parentWatch != nil, FolderWatch.identity(of: folder) != nil { watchFolder() }
        }
    }

    /// Waits for a relevant event, the timeout (-1: none), or the reader hanging up.
    /// Events about other files (the status writer's temporary files) do not end the wait.
    private func wait(milliseconds: Int32) -> End? {
        let deadline = milliseconds < 0 ? nil : MonotonicClock.now() + .milliseconds(milliseconds)
        let watch = folderWatch?.watch ?? parentWatch
        var fds = [
            // No events asked: poll still reports POLLERR when a pipe's reader closed it.
            pollfd(fd: STDOUT_FILENO, events: 0, revents: 0),
            pollfd(fd: watch?.fd ?? -1, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let ready: Int
            switch Poll.wait(&fds, until: deadline?.nanoseconds) {
            case .success(let count): ready = count
            case .failure(let error): return .failed(error)
            }
            if ready == 0 { return nil }
            if fds[0].revents & Int16(POLLERR | POLLHUP) != 0 { return .readerGone }
            if fds[1].revents & Int16(POLLIN) != 0, watch?.drain() == true { return nil }
        }
    }

    private static func lastComponent(of path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    private static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// A panel (or a test harness) may start us with SIGTERM blocked; the watcher has no
    /// cleanup to do and must die when its panel tells it to.
    private static func unblockTerminatingSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}
