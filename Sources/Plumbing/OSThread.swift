#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs blocking work (a `poll` loop, a blocking library call) on a thread of its
/// own, off Swift's cooperative pool, which must never be blocked: the pool has only
/// as many threads as cores, and the tasks that time the relay run on it.
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
        switch start(body) {
        case .success(let thread):
            pthread_detach(thread)
            return nil
        case .failure(let error):
            return error.code
        }
    }

    /// Starts `body` on a new joinable thread.
    private static func start(_ body: @escaping @Sendable () -> Void) -> Result<pthread_t, SystemError> {
        let box = Unmanaged.passRetained(Box(body))
        var thread = pthread_t()
        let status = pthread_create(
            &thread,
            nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
                return nil
            },
            box.toOpaque()
        )
        guard status == 0 else {
            box.release()
            return .failure(SystemError("pthread_create", code: status))
        }
        return .success(thread)
    }

    /// A thread that someone waits for: the simulator's receive loops, joined on exit.
    public final class Joinable: Sendable {
        private let id: pthread_t

        /// Starts `body` on a new thread; throws `pthread_create`'s error.
        public init(_ body: @escaping @Sendable () -> Void) throws(SystemError) {
            id = try OSThread.start(body).get()
        }

        /// Waits for the body to return. Call once.
        public func join() {
            pthread_join(id, nil)
        }
    }
}
