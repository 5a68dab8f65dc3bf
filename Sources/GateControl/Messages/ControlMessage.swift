import GateCore

extension PartReport {
    var json: JSONValue {
        .object([
            ("part", .string(part)), ("failures", .int(Int64(failures))), ("last_failure", .string(lastFailure)),
            ("restart_in_ms", restartIn.map { .int($0.milliseconds) } ?? .null),
        ])
    }

    enum CodingKeys: String, CodingKey {
        case part, failures
        case lastFailure = "last_failure"
        case restartInMs = "restart_in_ms"
    }

    init(reply decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            part: try members.decode(String.self, forKey: .part),
            failures: try members.decode(Int.self, forKey: .failures),
            lastFailure: try members.decode(String.self, forKey: .lastFailure),
            restartIn: try members.decodeIfPresent(Int64.self, forKey: .restartInMs).map { .milliseconds($0) }
        )
    }
}

extension ControlDaemon {
    enum CodingKeys: String, CodingKey {
        case pid, uid, config, runtime, parts
    }

    /// The daemon a `hello` or `who` names. A part that cannot be read is left out;
    /// daemons before issue 28 send no `parts`: no part failed, as far as they say.
    init(reply decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        var parts: [PartReport] = []
        if var reports = try? members.nestedUnkeyedContainer(forKey: .parts) {
            while !reports.isAtEnd {
                guard let report = try? reports.superDecoder() else { break }
                if let part = try? PartReport(reply: report) { parts.append(part) }
            }
        }
        self.init(
            pid: try members.decode(Int32.self, forKey: .pid),
            uid: try members.decode(UInt32.self, forKey: .uid),
            configPath: try members.decode(String.self, forKey: .config),
            runtimeDirectory: try members.decode(String.self, forKey: .runtime),
            parts: parts
        )
    }
}

extension OpeningResult {
    enum CodingKeys: String, CodingKey {
        case outcome, error, adapter, attempts, message
        case durationMs = "duration_ms"
    }

    /// The result as the daemon sent it (the object of `gate open --json`). The
    /// reasons come as the daemon worded them: they are kept as words, and the
    /// message as the explanation, so that the client prints exactly what the
    /// daemon's opening would have printed.
    init(reply decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        let outcome = try members.decode(OpeningOutcome.self, forKey: .outcome)
        let error = try members.decodeIfPresent(GateKeeperError.self, forKey: .error)
        guard (error?.outcome ?? .success) == outcome else {
            throw DecodingError.dataCorruptedError(forKey: .error, in: members, debugDescription: "not its outcome")
        }
        var list = try members.nestedUnkeyedContainer(forKey: .attempts)
        var attempts: [AttemptRecord] = []
        while !list.isAtEnd { attempts.append(try AttemptRecord(reply: list.superDecoder())) }
        self.init(
            error: error,
            adapter: try members.decodeIfPresent(AdapterKind.self, forKey: .adapter),
            duration: .milliseconds(try members.decode(Int64.self, forKey: .durationMs)),
            attempts: attempts,
            explanation: try members.decode(String.self, forKey: .message)
        )
    }
}

extension AttemptRecord {
    enum CodingKeys: String, CodingKey {
        case adapter, outcome, reason
        case durationMs = "duration_ms"
        case triggerSent = "trigger_sent"
    }

    init(reply decoder: any Decoder) throws {
        let members = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            adapter: try members.decode(AdapterKind.self, forKey: .adapter),
            outcome: try members.decode(AttemptOutcome.self, forKey: .outcome),
            reason: try members.decodeIfPresent(String.self, forKey: .reason).map(AttemptReason.adapter),
            duration: try members.decodeIfPresent(Int64.self, forKey: .durationMs).map { .milliseconds($0) },
            triggerSent: try members.decode(Bool.self, forKey: .triggerSent)
        )
    }
}
