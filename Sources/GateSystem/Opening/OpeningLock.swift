#if canImport(Glibc)
import Glibc
#endif
import GateCore
import Synchronization

/// The one lock every opener takes (SPEC §6): `flock(2)` on `lock`, held for the
/// whole opening. It dies with its process, so a killed opener leaves no stale lock.
///
/// The file also records who holds it (for a refused opener's message) and when
/// the last opening ended (for the cooldown). Owns its descriptor and closes it.
public final class OpeningLock: Sendable {
    public enum Acquisition {
        case acquired(OpeningLock)
        /// Another opener holds it; what its lock file says about it.
        case held(LockRecord?)
    }

    let fd: Int32
    let path: String
    /// What the file said before this opener wrote its own record.
    public let previous: LockRecord?

    private init(fd: Int32, path: String, previous: LockRecord?) {
        self.fd = fd
        self.path = path
        self.previous = previous
    }

    deinit {
        close(fd)
    }

    /// Takes the lock without waiting for a real opening. A reader's momentary
    /// shared lock (`isHeld`) can collide with this: retried for 20 ms, far shorter
    /// than any opening (which holds the lock for at least the relay's hold).
    public static func acquire(path: String, pid: Int32, source: String, since: String) -> Result<Acquisition, SystemError> {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o660)
        guard fd >= 0 else { return .failure(SystemError("open \(path)")) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_uid == geteuid() {
            // umask would narrow the group bits that let the group `gate` share the lock.
            _ = fchmod(fd, 0o660)
        }
        var tries = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            guard code == EWOULDBLOCK || code == EINTR else {
                close(fd)
                return .failure(SystemError("flock \(path)", code: code))
            }
            tries += 1
            if tries > 10 {
                let holder = readRecord(fd)
                close(fd)
                return .success(.held(holder))
            }
            usleep(2_000)
        }
        let previous = readRecord(fd)
        let lock = OpeningLock(fd: fd, path: path, previous: previous)
        lock.update { record in
            record = LockRecord(
                pid: pid, source: source, since: since, endedMonotonicNs: previous?.endedMonotonicNs,
                triggeredMonotonicNs: previous?.triggeredMonotonicNs
            )
        }
        return .success(.acquired(lock))
    }

    /// What this holder last wrote; the file is written under the same lock, from
    /// whichever thread records (the trigger is recorded by the thread that sends it).
    private let holder = Mutex(LockRecord(pid: nil, source: nil, since: nil, endedMonotonicNs: nil))

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
        holder.withLock { record in
            change(&record)
            write(record)
        }
    }

    /// Whether some opener holds the lock now. Never creates the file.
    ///
    /// A lock file this reader may not open tells nothing: it is then taken as held,
    /// so that the status file is shown as written rather than as an interruption.
    public static func isHeld(path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno != ENOENT }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
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
        return JSONValue.parse(Array(buffer[0..<count])).flatMap(LockRecord.init(json:))
    }
}
