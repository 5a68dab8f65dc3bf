/// The transports that can carry a trigger to the ESP32, in the order they are tried.
public enum AdapterKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case udp
    case mqtt

    public var description: String { rawValue }
}

/// What the ESP32 reports about its relay (`1`/`0x01` and `0`/`0x00`).
public enum RelayState: Sendable, Hashable {
    case activated
    case released
}

/// The state an opening is in, as shown to users and written to the status file.
public enum GateState: String, Sendable, Hashable, CaseIterable {
    case ready
    case triggering
    case waitingForRelayClose = "waiting_for_relay_close"
    case timeout
    case error
}

/// What an adapter observed, in the words of the protocol rather than the transport.
///
/// Adapters translate datagrams and MQTT messages into these; the state
/// machine decides what they mean for the opening. Text payloads are the
/// adapter's own account (it knows the host, the call and its error code).
public enum AdapterEvent: Sendable, Hashable {
    /// The trigger left this machine.
    case sent
    /// The ESP32 reported its relay state.
    case relay(RelayState)
    /// The ESP32's address answered something outside the protocol.
    case invalid(InvalidAnswer)
    /// The network refused at once (no route, ICMP port unreachable, connect refused):
    /// there is no evidence that a trigger reached the ESP32.
    case unreachable(String)
    /// The link ended after the trigger left and before any answer: the trigger may
    /// have reached the ESP32.
    case lost(String)
    /// The adapter cannot run as configured (a missing password, say): nothing was sent.
    case misconfigured(String)
    /// The adapter held its trigger back: nothing was sent.
    case withheld(Withholding)
    /// The adapter's budget ran out.
    case deadlineReached
    /// Protocol v2: a genuine reply for the opening's frame (its key id, gate and counter,
    /// its tag checked), with the ESP32's epoch in it. Only v2 adapters report these.
    case signed(V2ReplyKind, epoch: UInt32)
}

/// What came back outside the protocol (docs/CONTRACT.md#protocol), as the decoders found it.
public enum InvalidAnswer: Sendable, Hashable {
    case emptyDatagram
    /// A datagram byte other than `0x01`/`0x00`.
    case unexpectedByte(UInt8)
    /// A status payload other than `1`/`0`: its first bytes (trimmed) and its length.
    case unexpectedPayload([UInt8], count: Int, topic: String)
}

/// Why an adapter sent nothing although it could have (docs/CONTRACT.md#evidence-and-time).
public enum Withholding: Sendable, Hashable {
    /// The budget ended while this was still under way (resolving a name, connecting).
    case budgetSpent(during: String)
    /// A `1` without its `0` was seen on the status topic before the trigger.
    case relayActive
    /// The relay already answered an earlier trigger of this opening (seen on the
    /// status topic): the answer is on its way to the machine.
    case relayAnswered
    /// The process that asked for the opening (a control socket client) hung up
    /// before the trigger: nobody waits for it.
    case openerGone
}

/// How one adapter's attempt ended, as listed in `attempts` of `gate open --json`.
public enum AttemptOutcome: String, Sendable, Hashable {
    case success
    /// Relay activated but the release never came.
    case timeout
    /// Nothing at all came back within the budget.
    case noAnswer = "no_answer"
    /// The network refused before any answer, or the budget ended before anything was sent.
    case unreachable
    case invalidResponse = "invalid_response"
    /// The adapter could not run as configured; nothing was sent.
    case misconfigured
    /// Not tried: not configured, off-link, or the relay was busy.
    case skipped
}

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
