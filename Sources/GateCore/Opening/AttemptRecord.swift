/// One adapter's part in an opening.
public struct AttemptRecord: Sendable, Hashable {
    public var adapter: AdapterKind
    public var outcome: AttemptOutcome
    /// Why it ended that way; `nil` on success.
    public var reason: AttemptReason?
    /// `nil` for an adapter that was skipped.
    public var duration: Duration?
    /// Whether this attempt's trigger left the machine.
    public var triggerSent: Bool

    public init(
        adapter: AdapterKind,
        outcome: AttemptOutcome,
        reason: AttemptReason?,
        duration: Duration?,
        triggerSent: Bool = false
    ) {
        self.adapter = adapter
        self.outcome = outcome
        self.reason = reason
        self.duration = duration
        self.triggerSent = triggerSent
    }
}
