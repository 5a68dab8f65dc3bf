import GateCore
import Synchronization

/// Relay activity on the status topic, from a watcher the opener does not own
/// (the daemon's warm link): attach for the length of an opening.
public protocol StatusFeed: Sendable {
    /// Whether the last status seen was a `1` without its `0`, still within its
    /// release budget.
    var relayActive: Bool { get }
    /// The subscription now live (its SUBACK seen), or nil while there is none. It
    /// changes whenever the subscription is lost and made again: a watch that broke
    /// in between may have missed messages (docs/CONTRACT.md#evidence-and-time).
    var liveSession: UInt64? { get }
    /// Delivers every non-retained status message until the returned attachment ends.
    /// `echo` marks one that may be the owed echo of the opening attached before
    /// (`EchoLedger`): it never makes the relay busy, yet after this opening's trigger it
    /// is evidence like any other (an echo that never came must not hide an answer).
    func attach(_ observer: @escaping @Sendable (RelayObserver.Report, _ echo: Bool) -> Void) -> StatusFeedAttachment
    /// Returns once every message the broker sent before the call has been delivered;
    /// false when that cannot be known within `timeout` (the watch then counts as broken).
    func sync(timeout: Duration) async -> Bool
}
