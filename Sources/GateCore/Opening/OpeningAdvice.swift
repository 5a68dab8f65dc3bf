/// What a person does next after an opening that failed: the last line of
/// `gate open`'s failure text (docs/CONTRACT.md#gate-open). The exit code says
/// whether a retry is safe; this says it in words, with the setting to check.
public enum OpeningAdvice {
    /// The next step for `result`, worded with the configuration it ran with;
    /// `nil` after a success.
    public static func nextStep(for result: OpeningResult, config: GateConfig?) -> String? {
        guard let error = result.error else { return nil }
        let deciding = result.attempts.last { $0.triggerSent } ?? result.attempts.last { $0.outcome != .skipped }
        switch error {
        case .operationTimeout:
            return afterTrigger(deciding, config: config, handedOver: result.attempts.isEmpty)
        case .invalidResponse:
            return "Check the gate before trying again. " + answeredWrongly(deciding?.adapter, config: config)
        case .allAdaptersFailed, .udpConnectionFailed, .mqttConnectionFailed:
            return "Nothing was sent that could move the gate: try again once the cause above is fixed; "
                + "`gate doctor` checks the whole set-up."
        case .operationInProgress:
            // A refusal's explanation (the lock, the cooldown) ends with its own next step.
            return result.explanation == nil ? "Try again once that cycle has ended." : nil
        case .configurationMissing:
            return configuration(result.attempts)
        }
    }

    /// 124: a trigger left and the cycle was not confirmed.
    static func afterTrigger(_ attempt: AttemptRecord?, config: GateConfig?, handedOver: Bool) -> String {
        let check = "Check the gate before trying again."
        guard let attempt, let reason = attempt.reason else {
            return handedOver
                ? check + " The daemon's log says what happened (`journalctl -u gate`, or `--user` for a user unit)."
                : check + " If it repeats, run `gate doctor`."
        }
        switch reason.silence {
        case .some(true) where attempt.adapter == .udp:
            let address = config?.udp.map { " (\(hostAndPort($0.host, $0.port)))" } ?? ""
            return check + " Is udp.host\(address) the ESP32, and is it on? Run `gate doctor`."
        case .some(true):
            let broker = config?.mqtt.map { " at \(hostAndPort($0.host, $0.port))" } ?? ""
            return check
                + " Is the ESP32 connected to the broker\(broker), with the topics of [mqtt]? Run `gate doctor`."
        case .some(false), .none:
            return check + " If it repeats, run `gate doctor`."
        }
    }

    static func answeredWrongly(_ adapter: AdapterKind?, config: GateConfig?) -> String {
        switch adapter {
        case .udp?:
            let address = config?.udp.map { " at \(hostAndPort($0.host, $0.port))" } ?? ""
            return "Is it the ESP32 that answers\(address) (udp.host, udp.port)? Run `gate doctor`."
        case .mqtt?:
            let topic = config?.mqtt.map { " on \($0.statusTopic)" } ?? ""
            return "Does something other than the ESP32 publish\(topic) (mqtt.status_topic)? Run `gate doctor`."
        case nil:
            return "Run `gate doctor`."
        }
    }

    /// 78 from an opening: `--via` names an adapter that is not configured, or cannot run.
    static func configuration(_ attempts: [AttemptRecord]) -> String {
        if attempts.isEmpty {
            return "Fix what is named above; `gate doctor` checks the configuration and the runtime folder."
        }
        if let missing = attempts.first(where: { if case .notConfigured = $0.reason { true } else { false } }) {
            return "Add the [\(missing.adapter)] table to the configuration (`gate config path` names the file), "
                + "or leave out --via."
        }
        return "Fix what is named above; `gate doctor` confirms it."
    }

    /// `host:port`, with brackets around an IPv6 address.
    static func hostAndPort(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

extension AttemptReason {
    /// Whether this ended in silence (nothing came back at all: `true`) or after the
    /// ESP32 answered (`false`); `nil` for the rest.
    var silence: Bool? {
        switch self {
        case .noAnswer, .noSignedAnswer: return true
        case .unwatchedSilence(let inner, _): return inner.silence
        case .noRelease, .activatedAtDeadline, .failedAfterActivation, .releaseWithoutActivation,
            .releaseBeforeActivation, .lostAfterTrigger, .noSignedRelease, .busy, .staleEpochRetried,
            .staleEpochAgain, .staleEpochAfterUnansweredCopy:
            return false
        case .notConfigured, .offLink, .adapter, .invalid, .withheld, .stopped, .noEpoch: return nil
        }
    }
}
