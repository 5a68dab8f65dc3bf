import GateCore
import Synchronization

/// Stops a running attempt; safe to call more than once and after it finished.
public struct AttemptCancel: Sendable {
    let body: @Sendable () -> Void

    public init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    public func callAsFunction() {
        body()
    }
}
