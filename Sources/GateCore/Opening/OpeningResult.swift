/// Everything `gate open` reports about one opening.
public struct OpeningResult: Sendable, Hashable {
    public var error: GateKeeperError?
    /// The adapter that gave the final word (the one that succeeded, that saw the
    /// timeout or invalid answer, or whose trigger went unanswered); `nil` when no
    /// trigger can have reached the ESP32.
    public var adapter: AdapterKind?
    public var duration: Duration
    /// In adapter order, up to the attempt that decided the outcome.
    public var attempts: [AttemptRecord]
    /// Said by the caller when the opening ended before any adapter (the lock's
    /// holder, the cooldown, a configuration problem); otherwise `message` is
    /// worded from the attempts.
    public var explanation: String?

    public init(
        error: GateKeeperError?,
        adapter: AdapterKind?,
        duration: Duration,
        attempts: [AttemptRecord],
        explanation: String? = nil
    ) {
        self.error = error
        self.adapter = adapter
        self.duration = duration
        self.attempts = attempts
        self.explanation = explanation
    }

    public var outcome: OpeningOutcome { error?.outcome ?? .success }
    public var exitCode: Int32 { error?.exitCode ?? ExitStatus.success }
}

extension OpeningResult {
    /// What an opening whose machine stopped without a result reports: unreachable by
    /// construction (every path of a machine runs an adapter or finishes), said rather
    /// than trapped on an appliance. 124 once a recorded trigger left, 69 only when none did.
    public static func undecided(attempts: [AttemptRecord], duration: Duration) -> OpeningResult {
        let sent = attempts.last(where: \.triggerSent)
        return OpeningResult(
            error: sent == nil ? .allAdaptersFailed : .operationTimeout,
            adapter: sent?.adapter,
            duration: duration,
            attempts: attempts,
            explanation: "internal error: the opening stopped without a result"
        )
    }
}
