/// Desktop notifications through the freedesktop notification service (docs/CONTRACT.md#desktop).
public struct NotifyConfig: Sendable, Equatable {
    public static let defaultTimeoutMilliseconds = 10_000
    /// An hour: a notification server takes an `int32` of milliseconds, and a gate
    /// notice older than that tells nobody anything.
    public static let timeoutRange = 0...3_600_000

    /// Also the openings of this desktop's own CLI and widgets; otherwise only openings
    /// by others (`elsewhere`, `button`, `homeassistant`) and failures.
    public var everyOpening: Bool
    /// How long the server shows a notification; 0: until it is dismissed.
    public var timeoutMilliseconds: Int

    public init(everyOpening: Bool = false, timeoutMilliseconds: Int = NotifyConfig.defaultTimeoutMilliseconds) {
        self.everyOpening = everyOpening
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}
