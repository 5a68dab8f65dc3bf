#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs blocking work (a `poll` loop) on a thread of its own, off Swift's
/// cooperative pool, which must never be blocked.
enum OSThread {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Starts `body` on a new detached thread; returns the `pthread_create` error, if any.
    @discardableResult
    static func detach(_ body: @escaping @Sendable () -> Void) -> SystemError? {
        let box = Unmanaged.passRetained(Box(body))
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, { raw in
            guard let raw else { return nil }
            let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
            box.body()
            return nil
        }, box.toOpaque())
        if status != 0 {
            box.release()
            return SystemError("pthread_create", code: status)
        }
        return nil
    }
}

/// A self-pipe that wakes a `poll` loop from another thread. The descriptors are
/// closed when the last holder lets go, so a late `signal()` never hits a reused fd.
final class WakeSignal: Sendable {
    /// Poll this for `POLLIN`.
    let fd: Int32
    private let writeEnd: Int32

    init() throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw SystemError("pipe") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        self.fd = ends[0]
        self.writeEnd = ends[1]
    }

    /// Safe from any thread, any number of times: a full pipe is already signalled.
    func signal() {
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    deinit {
        close(fd)
        close(writeEnd)
    }
}
