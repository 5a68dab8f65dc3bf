/// The things `gate doctor` checks, in the order it checks and prints them.
public enum DoctorCheck: String, Sendable, Hashable, CaseIterable {
    case config
    case runtime
    case state
    /// Which daemon serves the runtime folder's control socket (docs/CONTRACT.md#the-control-socket).
    case daemon
    case udp
    /// The ESP32 answers an ICMP echo, or its address is in the neighbour table.
    case esp32
    /// Under `[esp32] protocol = 2`: the ESP32 answers a signed status query (never an open).
    case v2
    case mqttPassword = "mqtt-password"
    case mqttTCP = "mqtt-tcp"
    case mqttConnect = "mqtt-connect"
    case gpio
    case homeassistant
    /// The desktop notification server on the session bus, for `[notify]` (docs/CONTRACT.md#desktop).
    case notify
}

/// What one check found.
public struct DoctorFinding: Sendable, Hashable {
    /// Why a failed check fails; decides the exit status of the whole run.
    public enum FailureKind: Sendable, Hashable {
        /// Something to change in the configuration (the file, or the password that
        /// belongs to it: docs/CONTRACT.md#secrets calls a missing one the MQTT adapter's configuration problem).
        case configuration
        /// Something the gate needs is not there or not usable (a folder, a network,
        /// the broker, the GPIO chip).
        case unavailable
    }

    public enum Status: Sendable, Hashable {
        case ok
        /// Works, with something to change soon (a v2 ESP32 that still accepts v1); fails nothing.
        case warn
        /// Not applicable here, or not checkable because an earlier check failed.
        case skip
        /// `fix` is the concrete command or file to change.
        case fail(FailureKind, fix: String)
    }

    public var check: DoctorCheck
    public var status: Status
    /// One sentence (or, for a configuration with several problems, one per line).
    public var detail: String

    public init(_ check: DoctorCheck, _ status: Status, _ detail: String) {
        self.check = check
        self.status = status
        self.detail = detail
    }

    public static func ok(_ check: DoctorCheck, _ detail: String) -> DoctorFinding {
        DoctorFinding(check, .ok, detail)
    }

    public static func warn(_ check: DoctorCheck, _ detail: String) -> DoctorFinding {
        DoctorFinding(check, .warn, detail)
    }

    public static func skip(_ check: DoctorCheck, _ detail: String) -> DoctorFinding {
        DoctorFinding(check, .skip, detail)
    }

    public static func fail(_ check: DoctorCheck, _ kind: FailureKind, _ detail: String, fix: String) -> DoctorFinding {
        DoctorFinding(check, .fail(kind, fix: fix), detail)
    }

    public var statusWord: String {
        switch status {
        case .ok: "ok"
        case .warn: "warn"
        case .skip: "skip"
        case .fail: "fail"
        }
    }

    public var fix: String? {
        switch status {
        case .ok, .warn, .skip: nil
        case .fail(_, let fix): fix
        }
    }

    public var failed: Bool { fix != nil }
}

/// Every finding of one `gate doctor` run, with its exit status and its two renderings.
public struct DoctorReport: Sendable, Hashable {
    public var findings: [DoctorFinding]

    public init(findings: [DoctorFinding]) {
        self.findings = findings
    }

    /// 0 when nothing failed (skips are fine); 78 when every failure is a configuration
    /// problem (the file, or the MQTT password), since that is then all there is to fix;
    /// 69 when anything the gate needs is unavailable.
    public var exitStatus: Int32 {
        var status = ExitStatus.success
        for finding in findings {
            switch finding.status {
            case .ok, .warn, .skip:
                continue
            case .fail(.unavailable, _):
                return ExitStatus.unavailable
            case .fail(.configuration, _):
                status = ExitStatus.configuration
            }
        }
        return status
    }

    /// `--json`: one array, a `{check, status, detail, fix}` object per check, in order.
    public var json: JSONValue {
        .array(
            findings.map { finding in
                .object([
                    ("check", .string(finding.check.rawValue)),
                    ("status", .string(finding.statusWord)),
                    ("detail", .string(finding.detail)),
                    ("fix", .string(finding.fix)),
                ])
            }
        )
    }

    /// One line per check (`ok`, `FAIL`, `skip`), a failure's fix indented under it,
    /// then a one-line tally.
    public var text: String {
        let width = (DoctorCheck.allCases.map(\.rawValue.count).max() ?? 0) + 2
        var lines: [String] = []
        for finding in findings {
            let word: String
            switch finding.status {
            case .ok: word = "ok  "
            case .warn: word = "WARN"
            case .skip: word = "skip"
            case .fail: word = "FAIL"
            }
            let name = finding.check.rawValue
            let lead = "\(word)  \(name)\(String(repeating: " ", count: width - name.count))"
            let indent = String(repeating: " ", count: lead.count)
            let detailLines = finding.detail.split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in detailLines.enumerated() {
                lines.append((index == 0 ? lead : indent) + line)
            }
            if let fix = finding.fix {
                lines.append(indent + "fix: " + fix)
            }
        }
        let failed = findings.filter(\.failed).count
        let skipped = findings.filter { $0.status == .skip }.count
        let warned = findings.filter { $0.status == .warn }.count
        let passed = findings.count - failed - skipped - warned
        let verdict = failed == 0 ? "no check failed" : "\(failed) of \(findings.count) checks failed"
        let warnings = warned == 0 ? "" : ", \(warned) warning\(warned == 1 ? "" : "s")"
        lines.append("\(verdict) (\(passed) ok\(warnings), \(skipped) skipped)")
        return lines.joined(separator: "\n")
    }
}
