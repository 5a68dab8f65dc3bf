import Glibc

/// A plain OS thread for code that blocks in a system call (poll(2), later libmosquitto's
/// loop). Blocking there on Swift's cooperative pool would starve the tasks that time the
/// relay, and the pool has only as many threads as cores.
final class POSIXThread: Sendable {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private let id: pthread_t

    init(_ body: @escaping @Sendable () -> Void) throws(SystemError) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var id = pthread_t()
        let rc = pthread_create(&id, nil, { context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            body.run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw SystemError("pthread_create", code: rc)
        }
        self.id = id
    }

    /// Waits for the body to return. Call once.
    func join() {
        pthread_join(id, nil)
    }
}
