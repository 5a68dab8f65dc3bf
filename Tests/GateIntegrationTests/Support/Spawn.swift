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

/// Starts a watchdog shell that SIGKILLs `pid` as soon as this test process is gone, so
/// that a crashed test run leaves no broker or daemon behind. Field 4 of /proc/$$/stat is
/// the watchdog's parent pid: it changes (re-parenting to init) the moment the test
/// process dies, zombie or not. The caller kills the watchdog when it ends `pid` itself.
func startOrphanGuard(killing pid: Int32, label: String) throws -> Process {
    let script = #"while [ "$(cut -d' ' -f4 /proc/$$/stat)" = "$1" ]; do sleep 0.5; done; kill -9 "$2" 2>/dev/null"#
    let guardian = Process()
    guardian.executableURL = URL(fileURLWithPath: "/bin/sh")
    guardian.arguments = ["-c", script, label, String(getpid()), String(pid)]
    guardian.standardInput = FileHandle.nullDevice
    guardian.standardOutput = FileHandle.nullDevice
    guardian.standardError = FileHandle.nullDevice
    try runWithSignalsUnblocked(guardian)
    return guardian
}
