/// The words for what an opening decided: the machine returns typed reasons,
/// and this is the one place that turns them into sentences for people (the
/// terminal, `--json`'s `reason` and `message`, logs, the history).
extension AttemptReason: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notConfigured(let kind):
            return "not configured (no [\(kind)] table)"
        case .offLink(let host):
            return "\(host) is not on a directly connected network"
        case .adapter(let words):
            return words
        case .invalid(let answer):
            return answer.description
        case .noAnswer(let budget):
            return "no answer within \(budget.humanReadable)"
        case .noRelease(let budget):
            return "relay activated (1) but no release (0) within \(budget.humanReadable)"
        case .activatedAtDeadline(let budget):
            return
                "relay activated (1), read only at the end of the \(budget.humanReadable) budget; no release (0) within it"
        case .releaseBeforeActivation:
            return "the ESP32 reported the release (0) before the activation (1)"
        case .releaseWithoutActivation:
            return
                "the status topic showed the relay's release (0) after the trigger, without its activation (1); no other adapter was tried"
        case .failedAfterActivation(let words):
            return "relay activated (1), then the link failed before the release: \(words)"
        case .lostAfterTrigger(let words):
            return "the trigger was sent, then: \(words)"
        case .withheld(let why):
            return why.description
        case .stopped:
            return "the opening was stopped (the daemon is stopping) before the relay cycle was confirmed"
        case .unwatchedSilence(let silence, let next):
            return
                "\(silence); \(next) was not tried: the status topic was not watched when the trigger left, so the ESP32 may have cycled the relay with its answer lost, and a second trigger could cycle it twice"
        case .noEpoch(let why):
            return "cannot learn the ESP32's epoch: \(why); only a status query was sent"
        case .noSignedAnswer(let budget):
            return
                "no signed reply within \(budget.humanReadable) (an ESP32 without this key, or with v1 firmware, answers nothing)"
        case .noSignedRelease(let budget):
            return "relay activated (signed 0x90) but no signed release (0x91) within \(budget.humanReadable)"
        case .busy:
            return "the ESP32 answered 0x93: its relay is held by another opening; nothing moved"
        case .staleEpochRetried:
            return "the ESP32 answered 0x9E (stale epoch): nothing moved; one new frame with its epoch followed"
        case .staleEpochAgain:
            return "the ESP32 answered 0x9E (stale epoch) again, to the new frame; nothing moved"
        case .staleEpochAfterUnansweredCopy:
            return
                "the ESP32 answered 0x9E (stale epoch) after another copy of the frame went unanswered: that copy may have cycled the relay before the ESP32 restarted, so no new frame was sent"
        }
    }
}

extension InvalidAnswer: CustomStringConvertible {
    public var description: String {
        switch self {
        case .emptyDatagram:
            return "the ESP32 sent an empty datagram"
        case .unexpectedByte(let byte):
            return "the ESP32 answered byte \(UDPReplyDecoder.hex(byte)), expected 0x01 or 0x00"
        case .unexpectedPayload(let payload, let count, let topic):
            return
                "the ESP32 published \(MQTTStatusDecoder.shown(payload[...], count: count)) on \(topic), expected 1 or 0"
        }
    }
}

extension Withholding: CustomStringConvertible {
    public var description: String {
        switch self {
        case .budgetSpent(let during):
            return "the budget ended while \(during); nothing was sent"
        case .relayActive:
            return "the relay is active: another client's cycle (seen on the status topic); nothing was sent"
        case .relayAnswered:
            return "the relay already answered this opening's earlier trigger; nothing more was sent"
        case .openerGone:
            return "the client that asked for this opening hung up before the trigger; nothing was sent"
        }
    }
}

extension OpeningResult {
    /// One sentence for people: what happened and, on failure, why.
    public var message: String {
        if let explanation { return explanation }
        guard let error else {
            return "relay cycle confirmed via \(adapter?.rawValue ?? "?") in \(duration.milliseconds) ms"
        }
        if attempts.isEmpty { return "no adapter is configured" }
        if let busy = attempts.last, busy.reason == .withheld(.relayActive) {
            return Withholding.relayActive.description
        }
        let reasons = attempts.map { "\($0.adapter): \($0.reason?.description ?? $0.outcome.rawValue)" }.joined(
            separator: "; "
        )
        switch error {
        case .operationTimeout:
            return "a trigger was sent and the relay cycle was not confirmed; the relay may have cycled (\(reasons))"
        case .invalidResponse:
            return attempts.last.map { "\($0.adapter): \($0.reason?.description ?? $0.outcome.rawValue)" } ?? reasons
        case .configurationMissing, .udpConnectionFailed, .mqttConnectionFailed, .allAdaptersFailed,
            .operationInProgress:
            return reasons
        }
    }
}
