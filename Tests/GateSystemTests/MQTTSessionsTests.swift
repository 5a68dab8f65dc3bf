import Plumbing
import Testing

@testable import GateSystem

#if canImport(Glibc)
import Glibc
#endif

/// What `gate open` waits on before it exits: the count of connected MQTT sessions.
@Suite("MQTTSessions")
struct MQTTSessionsTests {
    @Test("None open: no wait; one open: the wait ends at its deadline, or when another thread ends the session")
    func waitsForTheLastSession() throws {
        let sessions = MQTTSessions()
        #expect(sessions.waitUntilNoneOpen(until: 0))
        // An earlier session's end left its signal behind: it must not end the wait.
        sessions.began()
        sessions.ended()
        sessions.began()
        var start = MonotonicNanoseconds.now()
        #expect(!sessions.waitUntilNoneOpen(until: start + 30_000_000), "a session still open was waited out")
        #expect(MonotonicNanoseconds.now() - start >= 30_000_000, "the wait ended before its deadline")
        start = MonotonicNanoseconds.now()
        let ender = try OSThread.Joinable {
            usleep(50_000)
            sessions.ended()
        }
        #expect(sessions.waitUntilNoneOpen(until: MonotonicNanoseconds.now() + 60_000_000_000))
        #expect(MonotonicNanoseconds.now() - start >= 50_000_000, "the wait ended before the session did")
        #expect(sessions.count == 0)
        ender.join()
    }
}
