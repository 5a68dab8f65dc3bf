#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The one `poll(2)` loop: waits until a descriptor is ready or a deadline comes,
/// restarting after a signal with the time that is left.
public enum Poll {
    /// Waits for `fds` until `deadline` (`CLOCK_MONOTONIC` nanoseconds; nil: no
    /// deadline). Returns how many descriptors are ready (0: the deadline came
    /// and nothing is). The wake-up is rounded up, never before the deadline.
    public static func wait(_ fds: inout [pollfd], until deadline: UInt64?) -> Result<Int, SystemError> {
        while true {
            var timeout: Int32 = -1
            if let deadline {
                let now = MonotonicNanoseconds.now()
                // Past the deadline, one last look without waiting: what already arrived counts.
                guard now < deadline else { return .success(max(0, Int(poll(&fds, nfds_t(fds.count), 0)))) }
                timeout = Int32(clamping: (deadline - now + 999_999) / 1_000_000)
            }
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready >= 0 { return .success(Int(ready)) }
            let code = errno
            if code == EINTR { continue }
            return .failure(SystemError("poll", code: code))
        }
    }

    /// Waits for one descriptor; true when it became ready before the deadline.
    public static func wait(for fd: Int32, events: Int16, until deadline: UInt64?) -> Bool {
        var fds = [pollfd(fd: fd, events: events, revents: 0)]
        if case .success(let ready) = wait(&fds, until: deadline) { return ready > 0 }
        return false
    }

    /// Whether `fd` has something to read right now (no waiting).
    public static func isReadable(_ fd: Int32) -> Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        return poll(&fds, 1, 0) > 0 && fds[0].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0
    }
}

/// Runs a system call again while it fails with `EINTR`; `errno` is left as the
/// last call set it.
@inlinable
public func retryingOnInterrupt<Result: BinaryInteger>(_ call: () -> Result) -> Result {
    while true {
        let result = call()
        if result < 0 && errno == EINTR { continue }
        return result
    }
}
