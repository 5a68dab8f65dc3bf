import Foundation

/// Foundation's `Process` spawns with the calling thread's signal mask, and test code runs on
/// Dispatch worker threads that block almost every signal: the child would inherit a blocked
/// SIGTERM (mosquitto then never logs "terminating" and only SIGKILL ends it). So spawn from a
/// short-lived thread whose mask is empty.
func runWithSignalsUnblocked(_ process: Process) throws {
    final class Outcome: @unchecked Sendable {
        let process: Process
        var error: (any Error)?
        let done = DispatchSemaphore(value: 0)
        init(_ process: Process) { self.process = process }
    }
    let outcome = Outcome(process)
    let thread = Thread {
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        do { try outcome.process.run() } catch { outcome.error = error }
        outcome.done.signal()
    }
    thread.start()
    outcome.done.wait()  // bounded: run() returns once posix_spawn has
    if let error = outcome.error { throw error }
}
