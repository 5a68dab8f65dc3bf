import GateCore
import GateTestSupport
import Plumbing
import Synchronization
import Testing

@testable import GateSystem

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

/// When the pipeline starts that thread: exactly when its plan puts MQTT first.
@Suite("The standby thread follows the plan")
struct StandbyChoiceTests {
    let mqtt = MQTTConfig(host: "127.0.0.1", port: 1883, timeout: 2)

    /// The choice the pipeline makes, from the plan it makes.
    func standby(
        _ factory: AdapterFactory,
        config: GateConfig,
        selection: AdapterSelection,
        udpLink: LinkVerdict?
    ) -> OSThread.Standby? {
        let plan = AdapterPlan.make(config: config, selection: selection, udpLink: udpLink)
        return factory.standby(first: plan.adapters.first?.kind, config: config)
    }

    @Test("MQTT first (forced, alone, or UDP off-link): a standby; UDP first or no MQTT: none")
    func followsThePlan() throws {
        let factory = AdapterFactory(credentials: CredentialLookup(sources: []))
        // The ESP32 named by an address of no directly connected network: the plan skips
        // UDP and MQTT goes first (documentation range; nothing is sent in this test).
        let offLink = GateConfig(
            udp: UDPConfig(host: "192.0.2.10", port: 4210, timeout: 2),
            mqtt: mqtt,
            runtime: RuntimeConfig()
        )
        let chosen = [
            standby(factory, config: offLink, selection: .auto, udpLink: .offLink),
            standby(factory, config: offLink, selection: .mqtt, udpLink: nil),
            standby(factory, config: GateConfig(mqtt: mqtt, runtime: RuntimeConfig()), selection: .auto, udpLink: nil),
        ]
        defer { for standby in chosen { standby?.release() } }
        #expect(chosen.allSatisfy { $0 != nil }, "\(chosen.map { $0 != nil })")
        #expect(standby(factory, config: offLink, selection: .auto, udpLink: .onLink(interface: "eth0")) == nil)
        #expect(standby(factory, config: offLink, selection: .udp, udpLink: .offLink) == nil)
        let udpOnly = GateConfig(udp: UDPConfig(host: "127.0.0.1", port: 4210, timeout: 2), runtime: RuntimeConfig())
        #expect(standby(factory, config: udpOnly, selection: .mqtt, udpLink: .loopback) == nil)
    }

    @Test("Scripted adapters get no standby")
    func noneForScriptedAdapters() {
        let factory = AdapterFactory { kind in FailedAdapter(kind: kind, event: .misconfigured("scripted")) }
        let config = GateConfig(mqtt: mqtt, runtime: RuntimeConfig())
        #expect(standby(factory, config: config, selection: .mqtt, udpLink: nil) == nil)
    }
}
