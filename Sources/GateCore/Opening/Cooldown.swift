/// The cooldown (docs/CONTRACT.md#cooldown): after a cycle ends, a new opening waits, so that a
/// double press cannot stop or reverse a toggle-type gate.
public enum Cooldown {
    public enum Verdict: Sendable, Hashable {
        case clear
        /// Refused; this much is left.
        case wait(Duration)
    }

    /// - Parameters:
    ///   - lastEnd: when the last opening that sent a trigger ended (monotonic), if any.
    public static func check(lastEnd: MonotonicInstant?, now: MonotonicInstant, cooldown: Duration) -> Verdict {
        guard let lastEnd, cooldown > .zero else { return .clear }
        let until = lastEnd + cooldown
        // A lastEnd in the future means the clock origin changed (a reboot since):
        // the old cycle is long over.
        guard lastEnd <= now, now < until else { return .clear }
        return .wait(until.duration(since: now))
    }
}
