#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GateCore
import Threading

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
            continuation.yield(.unreachable("cannot prepare the \(what): \(SystemError("pipe", code: error.code))"))
            continuation.finish()
            return AdapterAttempt(events: stream, cancel: {})
        }
        continuation.onTermination = { _ in wake.signal() }
        if let failure = OSThread.detach({
            body(continuation, wake)
            continuation.finish()
        }) {
            continuation.yield(.unreachable("cannot start the \(what): \(SystemError("pthread_create", code: failure))"))
            continuation.finish()
        }
        return AdapterAttempt(events: stream, cancel: { wake.signal() })
    }
}
