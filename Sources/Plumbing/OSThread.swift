import Synchronization

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

    /// A thread started before its work is known: it runs `warmUp` at once, then the
    /// one job `run` hands it, or ends when `release` comes first. For work that must
    /// load a library: glibc starts no thread while a library loads, so the thread that
    /// loads it is best the one that then uses it.
    public final class Standby: Sendable {
        private enum Slot {
            case waiting
            case job(@Sendable () -> Void)
            case released
        }

        private let slot = Mutex(Slot.waiting)
        private let wake: WakeSignal

        /// Starts the thread; throws `pipe`'s or `pthread_create`'s error.
        public init(warmUp: @escaping @Sendable () -> Void) throws(SystemError) {
            do {
                wake = try WakeSignal()
            } catch {
                throw SystemError("pipe", code: error.code)
            }
            if let failure = OSThread.detach({ [self] in
                warmUp()
                while true {
                    let next = slot.withLock { slot -> Slot in
                        if case .waiting = slot { return .waiting }
                        defer { slot = .released }
                        return slot
                    }
                    switch next {
                    case .waiting: _ = wake.wait(until: nil)
                    case .job(let job): return job()
                    case .released: return
                    }
                }
            }) {
                throw SystemError("pthread_create", code: failure)
            }
        }

        /// Hands `job` to the thread, to run after its warm-up; false when it already
        /// has one or was released (the caller then runs it elsewhere).
        public func run(_ job: @escaping @Sendable () -> Void) -> Bool {
            let taken = slot.withLock { slot -> Bool in
                guard case .waiting = slot else { return false }
                slot = .job(job)
                return true
            }
            if taken { wake.signal() }
            return taken
        }

        /// Lets the thread end without a job, if it has none yet.
        public func release() {
            let released = slot.withLock { slot -> Bool in
                guard case .waiting = slot else { return false }
                slot = .released
                return true
            }
            if released { wake.signal() }
        }
    }

    /// A thread that someone waits for: the simulator's receive loops, joined on exit.
    public final class Joinable: Sendable {
        private let id: pthread_t

        /// Starts `body` on a new thread; throws `pthread_create`'s error.
        public init(_ body: @escaping @Sendable () -> Void) throws(SystemError) {
            let box = Unmanaged.passRetained(Box(body))
            var id = pthread_t()
            let status = pthread_create(
                &id,
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
                throw SystemError("pthread_create", code: status)
            }
            self.id = id
        }

        /// Waits for the body to return. Call once.
        public func join() {
            pthread_join(id, nil)
        }
    }
}
