#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GateCore

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

extension AdapterAttempt {
    /// An attempt whose work blocks (sockets, libmosquitto's connect), run on a
    /// thread of its own that `body` owns. `body` yields events and must return
    /// promptly once `wake` is signalled (the consumer stopped listening); the
    /// stream finishes when it returns.
    static func onOwnThread(
        _ what: String,
        _ body: @escaping @Sendable (AsyncStream<AdapterEvent>.Continuation, WakeSignal) -> Void
    ) -> AdapterAttempt {
        let (stream, continuation) = AsyncStream.makeStream(of: AdapterEvent.self, bufferingPolicy: .unbounded)
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            continuation.yield(.unreachable("cannot prepare the \(what): \(error)"))
            continuation.finish()
            return AdapterAttempt(events: stream, cancel: {})
        }
        continuation.onTermination = { _ in wake.signal() }
        if let failure = OSThread.detach({
            body(continuation, wake)
            continuation.finish()
        }) {
            continuation.yield(.unreachable("cannot start the \(what): \(failure)"))
            continuation.finish()
        }
        return AdapterAttempt(events: stream, cancel: { wake.signal() })
    }
}
