import Plumbing
import Synchronization

/// The broker connections of the openings an `AdapterFactory` made that are still
/// up: counted from the CONNECT to the DISCONNECT. A decided opening stops its MQTT
/// link, and the link sends its DISCONNECT on a thread of its own; a process that
/// exits right after the opening (`gate open`) waits here for that, or its exit would
/// close the socket without a word and the broker would take the client for lost.
public final class MQTTSessions: Sendable {
    private let open = Mutex(0)
    /// Signalled each time the count drops to zero; `nil` if no pipe could be made
    /// (then nobody waits).
    private let none: WakeSignal?

    public init() {
        none = try? WakeSignal()
    }

    /// How many sessions are connected now.
    public var count: Int { open.withLock { $0 } }

    func began() {
        open.withLock { $0 += 1 }
    }

    func ended() {
        let left = open.withLock { count -> Int in
            count -= 1
            return count
        }
        if left == 0 { none?.signal() }
    }

    /// Waits until no session is connected, or `deadline` (`CLOCK_MONOTONIC`
    /// nanoseconds) comes; true when none is. Blocks the calling thread: for a
    /// process's last step, when nothing else is left to run.
    public func waitUntilNoneOpen(until deadline: UInt64) -> Bool {
        guard let none else { return count == 0 }
        while true {
            if count == 0 { return true }
            guard MonotonicNanoseconds.now() < deadline else { return false }
            // A signal from an earlier drop to zero wakes this early: the count decides.
            if none.wait(until: deadline) { none.clear() }
        }
    }
}
