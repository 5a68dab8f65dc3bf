import GateTestSupport
import Plumbing
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The thread an MQTT exchange runs on when MQTT goes first: started before the
/// exchange exists, it must run the one job it is given, on the thread that warmed
/// up, and end when it is given none.
@Suite("OSThread.Standby")
struct StandbyThreadTests {
    /// What the thread did, in order, with the thread it did it on.
    final class Journal: Sendable {
        let steps = Mutex<[(String, pthread_t)]>([])

        func note(_ step: String) {
            steps.withLock { $0.append((step, pthread_self())) }
        }

        var names: [String] { steps.withLock { $0.map(\.0) } }
        var threads: [pthread_t] { steps.withLock { $0.map(\.1) } }
    }

    @Test("The job runs once, after the warm-up, on the thread that warmed up; a second job is refused")
    func runsOneJobAfterWarmUp() async throws {
        let journal = Journal()
        let warmUpMayEnd = Mutex(false)
        let standby = try OSThread.Standby {
            journal.note("warm-up began")
            while !warmUpMayEnd.withLock({ $0 }) { usleep(1_000) }
            journal.note("warm-up ended")
        }
        #expect(await eventually { journal.names == ["warm-up began"] })
        // Handed over while the warm-up still runs (a library still loading): it waits.
        #expect(standby.run { journal.note("job") })
        #expect(!standby.run { journal.note("second job") }, "a second job was taken")
        usleep(20_000)
        #expect(journal.names == ["warm-up began"], "the job ran before the warm-up ended")
        warmUpMayEnd.withLock { $0 = true }
        #expect(await eventually { journal.names == ["warm-up began", "warm-up ended", "job"] })
        let threads = journal.threads
        #expect(threads.count == 3)
        #expect(threads.allSatisfy { pthread_equal($0, threads[0]) != 0 }, "the job ran on another thread")
        #expect(pthread_equal(threads[0], pthread_self()) == 0, "the warm-up ran on the caller's thread")
        standby.release()
        usleep(20_000)
        #expect(journal.names == ["warm-up began", "warm-up ended", "job"], "a release after the job ran it again")
    }

    @Test("Released without a job, the thread ends, and a job handed over later is refused")
    func releaseEndsTheThread() async throws {
        let journal = Journal()
        weak var watched: OSThread.Standby?
        do {
            let standby = try OSThread.Standby { journal.note("warm-up") }
            watched = standby
            #expect(await eventually { journal.names == ["warm-up"] })
            usleep(10_000)
            // Still waiting for a job: the thread holds the standby.
            #expect(watched != nil)
            standby.release()
            #expect(!standby.run { journal.note("late job") }, "a job was taken after the release")
        }
        // The thread let go of the standby: it returned.
        #expect(await eventually { watched == nil }, "the released thread is still waiting")
        #expect(journal.names == ["warm-up"])
    }

    @Test("Released during its warm-up, the thread ends after it without waiting for a job")
    func releaseDuringWarmUp() async throws {
        let journal = Journal()
        let warmUpMayEnd = Mutex(false)
        weak var watched: OSThread.Standby?
        do {
            let standby = try OSThread.Standby {
                journal.note("warm-up")
                while !warmUpMayEnd.withLock({ $0 }) { usleep(1_000) }
            }
            watched = standby
            #expect(await eventually { journal.names == ["warm-up"] })
            standby.release()
        }
        #expect(watched != nil, "the thread let go before its warm-up ended")
        warmUpMayEnd.withLock { $0 = true }
        #expect(await eventually { watched == nil }, "the thread waited for a job after its release")
        #expect(journal.names == ["warm-up"])
    }
}
