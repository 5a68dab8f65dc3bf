import GateCore
import GateSystem
import Plumbing
import Synchronization

/// `HostResolver.resolve` (getaddrinfo for a name, as an opening resolves it) with a
/// deadline: a dead resolver blocks for seconds, and the doctor must still finish.
/// The lookup runs on a thread of its own, which is left behind past the deadline
/// (the doctor exits soon after).
enum DoctorLookup {
    private final class Answer: Sendable {
        let value = Mutex<Result<SocketAddress, ResolutionFailure>?>(nil)
        let ready: WakeSignal

        init() throws(WakeSignalError) {
            ready = try WakeSignal()
        }
    }

    /// The address, the failure, or nil when no answer came within `budget`.
    static func resolve(host: String, port: Int, within budget: Duration) -> Result<SocketAddress, ResolutionFailure>? {
        // A literal needs no lookup and no thread.
        if IPAddress(literal: host) != nil { return HostResolver.resolve(host: host, port: port) }
        let deadline = MonotonicClock.now() + budget
        let answer: Answer
        do {
            answer = try Answer()
        } catch {
            return .failure(
                ResolutionFailure(message: "cannot resolve \(host): \(SystemError("pipe", code: error.code))")
            )
        }
        let failure = OSThread.detach {
            let result = HostResolver.resolve(host: host, port: port)
            answer.value.withLock { $0 = result }
            answer.ready.signal()
        }
        if let failure {
            return .failure(
                ResolutionFailure(message: "cannot resolve \(host): \(SystemError("pthread_create", code: failure))")
            )
        }
        _ = answer.ready.wait(until: deadline.nanoseconds)
        return answer.value.withLock { $0 }
    }
}
