import GateCore
import GateSystem
import Synchronization

/// A `StatusFeed` the test drives, standing for the daemon's warm link: it says whether
/// the relay is known to be active, and delivers the status messages the test hands it
/// to whoever is attached (the opening in progress).
///
/// Like the real link, a delivered `1` marks the relay active and a `0` frees it.
public final class FakeStatusFeed: StatusFeed {
    private struct State {
        var relayActive: Bool
        var liveSession: UInt64? = 1
        var observers: [Int: @Sendable (RelayObserver.Report, Bool) -> Void] = [:]
        var nextID = 0
        var attachments = 0
        var owed: [RelayObserver.Echoes] = []
        var heldBack: [RelayObserver.Report] = []
    }

    private let state: Mutex<State>

    public init(relayActive: Bool = false) {
        state = Mutex(State(relayActive: relayActive))
    }

    public var relayActive: Bool {
        get { state.withLock { $0.relayActive } }
    }

    /// Delivers `heldBack` first, as a link that read them only now; false with no
    /// live session.
    public func sync(timeout: Duration) async -> Bool {
        let late = state.withLock { state -> [RelayObserver.Report] in
            defer { state.heldBack = [] }
            return state.heldBack
        }
        for report in late { deliver(report) }
        return liveSession != nil
    }

    /// Status messages that reach the opening only when it syncs: they waited, unread,
    /// in a paused process's socket.
    public func holdBack(_ reports: [RelayObserver.Report]) {
        state.withLock { $0.heldBack += reports }
    }

    /// Live from the start (session 1), as a warm link that is up.
    public var liveSession: UInt64? { state.withLock { $0.liveSession } }

    /// The watch lost (nil) or made again (a new session).
    public func setLiveSession(_ session: UInt64?) {
        state.withLock { $0.liveSession = session }
    }

    public func setRelayActive(_ active: Bool) {
        state.withLock { $0.relayActive = active }
    }

    public func attach(_ observer: @escaping @Sendable (RelayObserver.Report, Bool) -> Void) -> StatusFeedAttachment {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.observers[state.nextID] = observer
            state.attachments += 1
            return state.nextID
        }
        return StatusFeedAttachment { [self] echoes in
            state.withLock {
                $0.observers.removeValue(forKey: id)
                $0.owed.append(echoes)
            }
        }
    }

    /// Observers attached now.
    public var attached: Int { state.withLock { $0.observers.count } }

    /// The echoes each ended attachment said were still to come, in order.
    public var echoesOwed: [RelayObserver.Echoes] { state.withLock { $0.owed } }

    /// How often anyone attached, detached or not.
    public var attachments: Int { state.withLock { $0.attachments } }

    /// A non-retained status message: delivered to every observer attached now (on the
    /// caller's thread, as the link's library thread would), marked as a possible echo of
    /// the opening before when `echo`. Returns how many got it.
    @discardableResult
    public func deliver(_ report: RelayObserver.Report, echo: Bool = false) -> Int {
        let observers = state.withLock { state in
            switch report {
            case .activated: state.relayActive = true
            case .released: state.relayActive = false
            case .invalid: break
            }
            return Array(state.observers.values)
        }
        for observer in observers { observer(report, echo) }
        return observers.count
    }
}
