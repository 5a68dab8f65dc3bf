import GateCore
import Synchronization

/// An opening's hold on a `StatusFeed`. Ending it says which echoes of the opening's
/// own cycle are still to come (`RelayObserver.Echoes`), in one step with the detach,
/// so that no status message falls between the two.
public struct StatusFeedAttachment: Sendable {
    let end: @Sendable (RelayObserver.Echoes) -> Void

    public init(end: @escaping @Sendable (RelayObserver.Echoes) -> Void) {
        self.end = end
    }

    public func detach(owing echoes: RelayObserver.Echoes) {
        end(echoes)
    }
}
