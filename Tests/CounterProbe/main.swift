// gate-counter-probe: a process that draws protocol v2 counters as an opening does, for
// CounterStoreTests (restarts and SIGKILL need real processes).
//
//   gate-counter-probe STATE_DIR RUNTIME_DIR KEY_ID COUNT LOG [HANG_AFTER]
//
// Takes the opening lock in RUNTIME_DIR, then draws COUNT counters for KEY_ID from
// STATE_DIR, "using" each by appending it to LOG (one line, fsynced) before the next, as a
// frame leaves before the next opening. With HANG_AFTER it uses one fewer: it draws the
// HANG_AFTER-th counter, writes it to LOG.hang instead of using it, and waits for the
// SIGKILL the test sends. Exit 1 with the error on stderr when a counter cannot be drawn.
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to stderr.
func fail(_ text: String) {
    _ = Descriptor.writeAll(STDERR_FILENO, Array(text.utf8))
}

let arguments = CommandLine.arguments
guard arguments.count == 6 || arguments.count == 7, let keyID = UInt8(arguments[3]), let count = Int(arguments[4])
else {
    fail("usage: gate-counter-probe STATE_DIR RUNTIME_DIR KEY_ID COUNT LOG [HANG_AFTER]\n")
    exit(64)
}
let hangAfter = arguments.count == 7 ? Int(arguments[6]) : nil
let logPath = arguments[5]

guard
    case .success(.acquired(let lock)) = OpeningLock.acquire(
        path: arguments[2] + "/lock",
        pid: getpid(),
        source: "counter-probe",
        since: "now"
    )
else {
    fail("gate-counter-probe: the opening lock is not free\n")
    exit(75)
}

let log = open(logPath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
guard log >= 0 else {
    fail("gate-counter-probe: cannot open \(logPath)\n")
    exit(1)
}

let store = CounterStore(stateDirectory: arguments[1], keyID: keyID)
for index in 0..<count {
    do {
        let counter = try store.next(holding: lock)
        let line = Array("\(counter)\n".utf8)
        if index + 1 == hangAfter {
            // Drawn, never used: say which, then wait for the SIGKILL.
            let temporary = logPath + ".hang.tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            _ = write(fd, line, line.count)
            close(fd)
            rename(temporary, logPath + ".hang")
            while true { pause() }
        }
        guard write(log, line, line.count) == line.count, fsync(log) == 0 else {
            fail("gate-counter-probe: cannot write \(logPath)\n")
            exit(1)
        }
    } catch {
        fail("\(error)\n")
        exit(1)
    }
}
lock.release()
exit(0)
