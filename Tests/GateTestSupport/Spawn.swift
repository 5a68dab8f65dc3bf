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

/// Closes this side's copies of the files `process` was given as standard streams, once it runs.
///
/// Foundation's `Process` on Linux outlives its child when it has a termination handler and
/// nobody calls `waitUntilExit()`, and every `FileHandle` it was given stays open with it: two
/// descriptors per `gate` run, 1,781 open at once in one full test run. Past about 1,350 open
/// descriptors `Process.run()` itself crashes (swift-corelibs-foundation#5472: it copies whole
/// 256-byte `d_name`s out of readdir's 32 KB buffer of /proc/self/fd and reads past its end).
/// The child has its own copies by now. Pipes need nothing (Process closes the child's end);
/// not for a handle that someone else owns, such as a terminal's slave side.
public func closeFileStreams(of process: Process) {
    for stream in [process.standardInput, process.standardOutput, process.standardError] {
        // Not /dev/null, and not this process's own 0, 1 and 2 (Process's defaults).
        guard let handle = stream as? FileHandle, handle !== FileHandle.nullDevice, handle.fileDescriptor > 2 else {
            continue
        }
        try? handle.close()  // stdout and stderr may be one handle: the second close is a no-op error
    }
}

/// The descriptors of this process that are open on a path under `directory` (deleted or
/// not): what a test helper must not leave behind once its child is done.
public func openDescriptors(under directory: URL) -> [String] {
    let prefix = directory.standardizedFileURL.path + "/"
    return openDescriptors { $0.hasPrefix(prefix) }
}

/// The descriptors of this process whose /proc/self/fd link reads exactly `name`
/// (`pipe:[1234]`, `socket:[5678]`).
public func openDescriptors(named name: String) -> [String] {
    openDescriptors { $0 == name }
}

private func openDescriptors(where matches: (String) -> Bool) -> [String] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
    return entries.compactMap { entry in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)"),
            matches(target)
        else { return nil }
        return "\(entry) -> \(target)"
    }
}
