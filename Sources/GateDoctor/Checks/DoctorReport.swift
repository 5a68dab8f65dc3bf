import GateCore

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
