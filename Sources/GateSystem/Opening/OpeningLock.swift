import GateCore
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The one lock every opener takes (docs/CONTRACT.md#the-lock), held for the whole opening: `flock(2)`
/// on the runtime folder itself, which members of the group cannot delete or replace,
/// and on `lock` in it, which they can (and which gate before this version locked
/// alone). It dies with its process, so a killed opener leaves no stale lock.
///
/// `lock` also records who holds it (for a refused opener's message) and when the
/// last opening ended (for the cooldown); it is opened through `SharedFile` (no link
/// followed, a regular file only). Owns its descriptors and closes them.
public final class OpeningLock: Sendable {
    public enum Acquisition {
        case acquired(OpeningLock)
        /// Another opener holds it; what its lock file says about it.
        case held(LockRecord?)
    }

    let fd: Int32
    /// The runtime folder, opened to be locked.
    let folder: Int32
    let path: String
    /// What the file said before this opener wrote its own record.
    public let previous: LockRecord?

    private init(fd: Int32, folder: Int32, path: String, previous: LockRecord?) {
        self.fd = fd
        self.folder = folder
        self.path = path
        self.previous = previous
    }

    deinit {
        release()
    }

    /// Lets the next opener in, once: the opening is over. Called when the opening has
    /// finished rather than left to `deinit`, because an adapter's thread stuck in a
    /// blocking call (a connect to a blackholed broker) still holds the opening's
    /// permit, and with it this lock, for as long as the kernel lets it block.
    /// Nothing is written after it.
    public func release() {
        holder.withLock { state in
            guard state.open else { return }
            state.open = false
            close(fd)
            close(folder)
        }
    }

    /// Takes the lock without waiting for a real opening. A reader's momentary
    /// shared lock (`isHeld`) can collide with this: retried for 20 ms, far shorter
    /// than any opening (which holds the lock for at least the relay's hold).
    ///
    /// The folder is locked first: deleting or replacing `lock` while it is held lets
    /// nobody in. A `lock` that is not a usable regular file is an error naming it.
    public static func acquire(
        path: String,
        pid: Int32,
        source: String,
        since: String
    ) -> Result<Acquisition, SharedFileError> {
        let directory = ConfigLocator.directory(of: path)
        let name = String(path.split(separator: "/").last ?? Substring(path))
        let folder: Int32
        switch SharedFile.openDirectory(directory) {
        case .success(let opened): folder = opened
        case .failure(let error): return .failure(error)
        }
        switch takeFolder(folder, directory: directory, name: name, path: path) {
        case .failure(let error):
            close(folder)
            return .failure(error)
        case .success(.held(let holder)):
            close(folder)
            return .success(.held(holder))
        case .success(.taken):
            break
        }
        let fd: Int32
        switch SharedFile.open(name, in: folder, path: path, access: .readWrite, create: 0o660) {
        case .success(let opened): fd = opened
        case .failure(let error):
            close(folder)
            return .failure(error)
        }
        switch takeExclusive(fd, path: path) {
        case .success(true):
            break
        case .success(false):
            // An opener of an older gate, which locks the file only.
            let holder = readRecord(fd)
            close(fd)
            close(folder)
            return .success(.held(holder))
        case .failure(let error):
            close(fd)
            close(folder)
            return .failure(error)
        }
        let previous = readRecord(fd)
        let lock = OpeningLock(fd: fd, folder: folder, path: path, previous: previous)
        lock.update { record in
            record = LockRecord(
                pid: pid,
                source: source,
                since: since,
                endedMonotonicNs: previous?.endedMonotonicNs,
                triggeredMonotonicNs: previous?.triggeredMonotonicNs
            )
        }
        return .success(.acquired(lock))
    }

    /// What the status keeper calls itself in `lock` while it tidies (`StatusKeeperService`).
    public static let tidySource = "status-keeper"
    /// How long an opener waits for a tidy. A tidy holds the lock for a read and a rename
    /// only (its fsync comes before: `StagedReplacement`), so it is over long before this.
    static let tidyWait = Duration.seconds(2)

    private enum FolderLock {
        case taken
        /// What `lock` says of the holder.
        case held(LockRecord?)
    }

    /// The folder's flock. A tidy is waited for (docs/CONTRACT.md#the-lock: tidying never
    /// refuses an opener); an opening is not.
    private static func takeFolder(
        _ folder: Int32,
        directory: String,
        name: String,
        path: String
    ) -> Result<FolderLock, SharedFileError> {
        let started = MonotonicClock.now()
        while true {
            switch takeExclusive(folder, path: directory) {
            case .failure(let error):
                return .failure(error)
            case .success(true):
                return .success(.taken)
            case .success(false):
                let holder = readHolder(name, in: folder, path: path)
                guard holder?.source == tidySource, MonotonicClock.now().duration(since: started) < tidyWait else {
                    return .success(.held(holder))
                }
            }
        }
    }

    /// `flock(LOCK_EX | LOCK_NB)`, retried for 20 ms; false when someone else holds it.
    private static func takeExclusive(_ fd: Int32, path: String) -> Result<Bool, SharedFileError> {
        var tries = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                return .failure(SharedFileError(path: path, problem: .system(SystemError("flock", code: code))))
            }
            tries += 1
            if tries > 10 { return .success(false) }
            usleep(2_000)
        }
        return .success(true)
    }

    /// What `lock` says about its holder, if it can be read safely.
    private static func readHolder(_ name: String, in folder: Int32, path: String) -> LockRecord? {
        guard case .success(let fd) = SharedFile.open(name, in: folder, path: path, access: .readOnly) else {
            return nil
        }
        defer { close(fd) }
        return readRecord(fd)
    }

    /// What this holder last wrote; the file is written under the same lock, from
    /// whichever thread records (the trigger is recorded by the thread that sends it).
    private let holder = Mutex(
        (record: LockRecord(pid: nil, source: nil, since: nil, endedMonotonicNs: nil), open: true)
    )

    /// Records that a trigger is about to be sent (the cooldown's start if this
    /// opener never records an end).
    public func recordTrigger(at instant: MonotonicInstant) {
        update { $0.triggeredMonotonicNs = instant.nanoseconds }
    }

    /// Records the end of an opening that sent a trigger (starts the cooldown).
    public func recordEnd(at instant: MonotonicInstant) {
        update { record in
            record.pid = nil
            record.since = nil
            record.endedMonotonicNs = instant.nanoseconds
        }
    }

    private func update(_ change: (inout LockRecord) -> Void) {
        holder.withLock { state in
            guard state.open else { return }
            change(&state.record)
            write(state.record)
        }
    }

    /// Whether some opener holds the lock now: the runtime folder's flock (or, for an
    /// opener of an older gate, the one of `lock`). Never creates anything.
    ///
    /// A folder this reader may not open tells nothing: the lock is then taken as held,
    /// so that the status file is shown as written rather than as an interruption.
    public static func isHeld(path: String) -> Bool {
        let folder = open(ConfigLocator.directory(of: path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else { return errno != ENOENT }
        defer { close(folder) }
        guard sharedLockIsFree(folder) else { return true }
        let name = String(path.split(separator: "/").last ?? Substring(path))
        guard case .success(let fd) = SharedFile.open(name, in: folder, path: path, access: .readOnly) else {
            return false
        }
        defer { close(fd) }
        return !sharedLockIsFree(fd)
    }

    /// A shared flock taken and dropped at once: it never blocks an opener for long.
    private static func sharedLockIsFree(_ fd: Int32) -> Bool {
        if retryingOnInterrupt({ flock(fd, LOCK_SH | LOCK_NB) }) != 0 {
            return errno != EWOULDBLOCK
        }
        flock(fd, LOCK_UN)
        return true
    }

    private func write(_ record: LockRecord) {
        let bytes = Array((record.json.serialized() + "\n").utf8)
        _ = ftruncate(fd, 0)
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    private static func readRecord(_ fd: Int32) -> LockRecord? {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return LockRecord(json: buffer[0..<count])
    }
}
