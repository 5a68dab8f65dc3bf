/// A transport that can carry one trigger to the ESP32 and report what comes back.
///
/// The MQTT adapter plugs in here next to the UDP one; the state machine only
/// ever sees `AdapterEvent`s, so adding a transport never touches it.
public protocol GateAdapter: Sendable {
    var kind: AdapterKind { get }

    /// Sends one trigger and reports what comes back.
    ///
    /// The stream yields `.sent` once the trigger has left, then whatever the ESP32
    /// reports. At `deadline` it yields `.deadlineReached` and finishes. After
    /// `cancel()` the adapter stops listening and releases its resources promptly.
    func attempt(deadline: MonotonicInstant) -> AdapterAttempt
}

/// One running attempt: its events, and the way to stop it.
public struct AdapterAttempt: Sendable {
    public let events: AsyncStream<AdapterEvent>
    private let stop: @Sendable () -> Void

    public init(events: AsyncStream<AdapterEvent>, cancel: @escaping @Sendable () -> Void) {
        self.events = events
        self.stop = cancel
    }

    /// Stops listening; safe to call more than once and after the stream ended.
    public func cancel() {
        stop()
    }
}
