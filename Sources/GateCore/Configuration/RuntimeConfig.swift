/// Timing rules that apply whatever the adapter.
public struct RuntimeConfig: Sendable, Equatable {
    public static let defaultResetDelay: Double = 3.0
    public static let defaultCooldown: Double = 2.0

    /// Seconds spent in `timeout` or `error` before `ready` again.
    public var resetDelay: Double
    /// Seconds after a cycle during which a new opening is refused.
    public var cooldown: Double

    public init(resetDelay: Double = RuntimeConfig.defaultResetDelay, cooldown: Double = RuntimeConfig.defaultCooldown)
    {
        self.resetDelay = resetDelay
        self.cooldown = cooldown
    }
}
