#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A self-pipe that wakes a `poll` loop from another thread. The descriptors are
/// closed when the last holder lets go, so a late `signal()` never hits a reused fd.
public final class WakeSignal: Sendable {
    /// Poll this for `POLLIN`.
    public let fd: Int32
    private let writeEnd: Int32

    /// Fails with the `pipe(2)` errno.
    public init() throws(WakeSignalError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw WakeSignalError(code: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        self.fd = ends[0]
        self.writeEnd = ends[1]
    }

    /// Safe from any thread, any number of times: a full pipe is already signalled.
    public func signal() {
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    /// Waits until it is signalled or `deadline` (`CLOCK_MONOTONIC` nanoseconds; nil:
    /// none) comes; true when signalled. The signal stays set until `clear()`.
    public func wait(until deadline: UInt64?) -> Bool {
        Poll.wait(for: fd, events: Int16(POLLIN), until: deadline)
    }

    /// Takes back every signal given so far.
    public func clear() {
        var drained = [UInt8](repeating: 0, count: 64)
        while read(fd, &drained, drained.count) > 0 {}
    }

    deinit {
        close(fd)
        close(writeEnd)
    }
}
