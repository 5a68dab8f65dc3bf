import CSched
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import Threading

/// Where a thread started with `OSThread.detach(elsewhere:)` ran first, and what
/// it may use once running.
private struct Start: Sendable {
    var cpu: Int32
    var mayUseEveryCPU: Bool
}

private func affinity() -> cpu_set_t? {
    var mask = cpu_set_t()
    return sched_getaffinity(0, MemoryLayout<cpu_set_t>.size, &mask) == 0 ? mask : nil
}

private func count(_ mask: cpu_set_t) -> Int {
    withUnsafeBytes(of: mask) { bytes in bytes.reduce(0) { $0 + $1.nonzeroBitCount } }
}

private func same(_ a: cpu_set_t, _ b: cpu_set_t) -> Bool {
    withUnsafeBytes(of: a) { left in withUnsafeBytes(of: b) { right in left.elementsEqual(right) } }
}

/// Starts one thread and waits (bounded) until its body has run.
private func startOne(elsewhere: Bool, callerMask: cpu_set_t) throws -> (caller: Int32, start: Start) {
    let done = try WakeSignal()
    let result = Mutex<Start?>(nil)
    let caller = sched_getcpu()
    let failure = OSThread.detach(elsewhere: elsewhere) {
        let cpu = sched_getcpu()
        let restored = affinity().map { same($0, callerMask) } ?? false
        result.withLock { $0 = Start(cpu: cpu, mayUseEveryCPU: restored) }
        done.signal()
    }
    #expect(failure == nil)
    // The caller stays busy for a while, as `gate open`'s main thread does: a thread
    // placed behind it would not run until it stops.
    let spinUntil = ContinuousClock.now + .milliseconds(20)
    while result.withLock({ $0 }) == nil, ContinuousClock.now < spinUntil {}
    var fds = [pollfd(fd: done.fd, events: Int16(POLLIN), revents: 0)]
    try #require(poll(&fds, 1, 5_000) == 1, "the thread's body never ran")
    return (caller, try #require(result.withLock { $0 }))
}

@Suite("OSThread: threads started on another core")
struct OSThreadTests {
    @Test("Started elsewhere: off the caller's CPU first, then free to use every CPU the caller may")
    func elsewhere() throws {
        let mask = try #require(affinity())
        var elsewhere = 0
        for _ in 0..<20 {
            let (caller, start) = try startOne(elsewhere: true, callerMask: mask)
            #expect(start.mayUseEveryCPU, "the placement must not stay a restriction")
            if start.cpu != caller { elsewhere += 1 }
        }
        if count(mask) >= 2 {
            // The caller itself may move between its own reading and the thread's start;
            // rarely, so most starts must land elsewhere.
            #expect(elsewhere >= 15, "only \(elsewhere) of 20 threads started off the caller's CPU")
        } else {
            #expect(elsewhere == 0)
        }
    }

    @Test("Without elsewhere the thread runs with the caller's CPUs, untouched")
    func plain() throws {
        let mask = try #require(affinity())
        let (_, start) = try startOne(elsewhere: false, callerMask: mask)
        #expect(start.mayUseEveryCPU)
    }
}
