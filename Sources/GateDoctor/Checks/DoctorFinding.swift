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

    public static func ok(_ check: DoctorCheck, _ detail: String) -> DoctorFinding { .init(check, .ok, detail) }
    public static func warn(_ check: DoctorCheck, _ detail: String) -> DoctorFinding { .init(check, .warn, detail) }
    public static func skip(_ check: DoctorCheck, _ detail: String) -> DoctorFinding { .init(check, .skip, detail) }

    public static func fail(_ check: DoctorCheck, _ kind: FailureKind, _ detail: String, fix: String) -> DoctorFinding {
        DoctorFinding(check, .fail(kind, fix: fix), detail)
    }

    /// The two kinds by name: a verdict says which kind of failure in one word.
    public static func unavailable(_ check: DoctorCheck, _ detail: String, fix: String) -> DoctorFinding {
        .fail(check, .unavailable, detail, fix: fix)
    }

    public static func misconfigured(_ check: DoctorCheck, _ detail: String, fix: String) -> DoctorFinding {
        .fail(check, .configuration, detail, fix: fix)
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
        if case .fail(_, let fix) = status { fix } else { nil }
    }

    public var failed: Bool { fix != nil }
}
