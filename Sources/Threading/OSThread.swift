import CSched
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs blocking work (a `poll` loop) on a thread of its own, off Swift's
/// cooperative pool, which must never be blocked. Shared by the network
/// adapters and the GPIO edge reader.
public enum OSThread {
    private final class Box {
        let body: @Sendable () -> Void
        /// The CPUs the thread may use once it runs, when it was started elsewhere.
        let allowed: cpu_set_t?
        init(_ body: @escaping @Sendable () -> Void, allowed: cpu_set_t?) {
            self.body = body
            self.allowed = allowed
        }
    }

    /// Starts `body` on a new detached thread; returns `pthread_create`'s error code, if any.
    ///
    /// - Parameter elsewhere: start it on a CPU other than the caller's, for work meant
    ///   to run beside the caller's own. Linux places a new thread on its creator's CPU
    ///   more often than not, and there it waits until the creator blocks or is
    ///   preempted: measured on a 2-core machine with the creator busy, 25 of 30 new
    ///   threads had not run 3 ms later; started on the other CPU, all ran within
    ///   0.1 ms. Only the first placement is chosen: the thread then may use every
    ///   CPU the process may. Ignored on a single CPU.
    @discardableResult
    public static func detach(elsewhere: Bool = false, _ body: @escaping @Sendable () -> Void) -> Int32? {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var allowed: cpu_set_t?
        if elsewhere, let (all, others) = otherCPUs() {
            allowed = all
            var first = others
            _ = pthread_attr_setaffinity_np(&attributes, MemoryLayout<cpu_set_t>.size, &first)
        }
        let box = Unmanaged.passRetained(Box(body, allowed: allowed))
        var thread = pthread_t()
        let start: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { raw in
            guard let raw else { return nil }
            let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
            if var allowed = box.allowed {
                _ = sched_setaffinity(0, MemoryLayout<cpu_set_t>.size, &allowed)
            }
            box.body()
            return nil
        }
        var status = pthread_create(&thread, &attributes, start, box.toOpaque())
        if status != 0, allowed != nil {
            // The placement is only a preference: a CPU that went away since is no reason
            // not to start.
            var anywhere = pthread_attr_t()
            pthread_attr_init(&anywhere)
            defer { pthread_attr_destroy(&anywhere) }
            pthread_attr_setdetachstate(&anywhere, Int32(PTHREAD_CREATE_DETACHED))
            status = pthread_create(&thread, &anywhere, start, box.toOpaque())
        }
        if status != 0 {
            box.release()
            return status
        }
        return nil
    }

    /// The process's CPUs, and the same without the calling thread's; nil when
    /// there is no other.
    private static func otherCPUs() -> (all: cpu_set_t, others: cpu_set_t)? {
        var all = cpu_set_t()
        guard sched_getaffinity(0, MemoryLayout<cpu_set_t>.size, &all) == 0 else { return nil }
        let current = Int(sched_getcpu())
        var others = all
        var any = false
        withUnsafeMutableBytes(of: &others) { bits in
            if current >= 0, current / 8 < bits.count {
                bits[current / 8] &= ~UInt8(1 << (current % 8))
            }
            any = bits.contains { $0 != 0 }
        }
        return any ? (all, others) : nil
    }
}

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

    deinit {
        close(fd)
        close(writeEnd)
    }
}

/// `pipe(2)` failed for a `WakeSignal`.
public struct WakeSignalError: Error, Sendable {
    public var code: Int32
}
