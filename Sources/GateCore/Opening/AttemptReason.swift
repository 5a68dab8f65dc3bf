/// Why an attempt ended as it did: typed here, worded in `OpeningWording`.
public enum AttemptReason: Sendable, Hashable {
    /// No `[udp]` or `[mqtt]` table.
    case notConfigured(AdapterKind)
    /// The ESP32's address is not on a directly connected network.
    case offLink(host: String)
    /// The adapter's own account: a name that did not resolve, a refused connection…
    case adapter(String)
    /// The ESP32 answered outside the protocol.
    case invalid(InvalidAnswer)
    case noAnswer(budget: Duration)
    /// `1` seen, `0` not within the budget.
    case noRelease(budget: Duration)
    /// `1` read only once the budget was over (a paused or starved process).
    case activatedAtDeadline(budget: Duration)
    case releaseBeforeActivation
    /// The status topic showed a release (`0`) without its activation after the
    /// trigger, and the attempt's own answer never came.
    case releaseWithoutActivation
    /// `1` seen, then the link failed.
    case failedAfterActivation(String)
    /// The trigger left, then the link ended before any answer.
    case lostAfterTrigger(String)
    case withheld(Withholding)
    /// The opening was stopped from outside (the daemon stopping) before its cycle
    /// was confirmed.
    case stopped
    /// No answer to a trigger that left while nothing watched the status topic; the
    /// next adapter was not tried.
    indirect case unwatchedSilence(AttemptReason, next: AdapterKind)
}
