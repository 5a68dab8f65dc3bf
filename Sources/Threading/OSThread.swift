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
        init(_ body: @escaping @Sendable () -> Void) {
            self.body = body
        }
    }

    /// Starts `body` on a new detached thread; returns `pthread_create`'s error code, if any.
    @discardableResult
    public static func detach(_ body: @escaping @Sendable () -> Void) -> Int32? {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let box = Unmanaged.passRetained(Box(body))
        var thread = pthread_t()
        let start: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { raw in
            guard let raw else { return nil }
            Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }
        let status = pthread_create(&thread, &attributes, start, box.toOpaque())
        if status != 0 {
            box.release()
            return status
        }
        return nil
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
