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
    /// Protocol v2 (docs/CONTRACT.md#protocol-v2-openings): the ESP32's epoch could not be
    /// learnt this way; nothing but a status query was sent.
    case noEpoch(String)
    /// Protocol v2: no signed reply for the frame within the budget.
    case noSignedAnswer(budget: Duration)
    /// Protocol v2: the signed `0x90` came, the signed `0x91` not within the budget.
    case noSignedRelease(budget: Duration)
    /// Protocol v2: `0x93`, the relay is held by another opening; nothing moved.
    case busy
    /// Protocol v2: `0x9E` to the frame's only copy; nothing moved, a new frame with the
    /// ESP32's epoch followed.
    case staleEpochRetried
    /// Protocol v2: `0x9E` again, to the new frame; nothing moved.
    case staleEpochAgain
    /// Protocol v2: `0x9E` to one copy while another copy of the same frame went
    /// unanswered (it may have cycled the relay before the ESP32 restarted): no new frame.
    case staleEpochAfterUnansweredCopy
}
