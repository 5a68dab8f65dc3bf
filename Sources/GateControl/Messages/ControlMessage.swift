import GateCore

extension PartReport {
    var json: JSONValue {
        .object([
            ("part", .string(part)), ("failures", .int(Int64(failures))), ("last_failure", .string(lastFailure)),
            ("restart_in_ms", restartIn.map { .int($0.milliseconds) } ?? .null),
        ])
    }

    init?(json value: JSONValue) {
        guard let part = try? value.requiredString("part"),
            let failures = try? value.requiredInteger("failures", as: Int.self),
            let lastFailure = try? value.requiredString("last_failure")
        else { return nil }
        let restartIn: Duration?
        switch value["restart_in_ms"] {
        case nil, .null?: restartIn = nil
        case .int(let milliseconds)?: restartIn = .milliseconds(milliseconds)
        case .string?, .bool?, .array?, .object?: return nil
        }
        self.init(part: part, failures: failures, lastFailure: lastFailure, restartIn: restartIn)
    }
}

extension OpeningResult {
    /// The result as the daemon sent it (the object of `gate open --json`). The
    /// reasons come as the daemon worded them: they are kept as words, and the
    /// message as the explanation, so that the client prints exactly what the
    /// daemon's opening would have printed.
    init?(reply value: JSONValue) {
        let errorText: String?
        let adapterText: String?
        let durationMs: Int64
        let message: String
        let outcome: OpeningOutcome
        do {
            guard let known = OpeningOutcome(rawValue: try value.requiredString("outcome")) else { return nil }
            outcome = known
            errorText = try value.optionalString("error")
            adapterText = try value.optionalString("adapter")
            durationMs = try value.requiredInteger("duration_ms", as: Int64.self)
            message = try value.requiredString("message")
        } catch {
            return nil
        }
        guard case .array(let attemptValues)? = value["attempts"] else { return nil }
        var error: GateKeeperError?
        if let errorText {
            guard let known = GateKeeperError(rawValue: errorText) else { return nil }
            error = known
        }
        guard (error?.outcome ?? .success) == outcome else { return nil }
        var adapter: AdapterKind?
        if let adapterText {
            guard let known = AdapterKind(rawValue: adapterText) else { return nil }
            adapter = known
        }
        var attempts: [AttemptRecord] = []
        for attemptValue in attemptValues {
            guard let attempt = AttemptRecord(reply: attemptValue) else { return nil }
            attempts.append(attempt)
        }
        self.init(
            error: error,
            adapter: adapter,
            duration: .milliseconds(durationMs),
            attempts: attempts,
            explanation: message
        )
    }
}

extension AttemptRecord {
    init?(reply value: JSONValue) {
        let reason: String?
        let durationMs: Int64?
        guard let adapter = (try? value.requiredString("adapter")).flatMap(AdapterKind.init(rawValue:)),
            let outcome = (try? value.requiredString("outcome")).flatMap(AttemptOutcome.init(rawValue:)),
            case .bool(let triggerSent)? = value["trigger_sent"]
        else { return nil }
        do {
            reason = try value.optionalString("reason")
            durationMs = try value.optionalInteger("duration_ms", as: Int64.self)
        } catch {
            return nil
        }
        self.init(
            adapter: adapter,
            outcome: outcome,
            reason: reason.map(AttemptReason.adapter),
            duration: durationMs.map { .milliseconds($0) },
            triggerSent: triggerSent
        )
    }
}
