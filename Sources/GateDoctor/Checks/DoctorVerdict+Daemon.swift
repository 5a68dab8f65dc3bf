import GateControl
import GateCore

extension DoctorVerdict {
    /// Which daemon serves this account's runtime folder (docs/CONTRACT.md#the-control-socket): the system
    /// service (root, the folder's owner or the service's user), this account's own (the user unit), or
    /// none, in which case every opening connects by itself. `configPath` is the file
    /// this account's openings read: a daemon reading another one declines them.
    public static func daemon(_ facts: DaemonFacts, user: DoctorUser, configPath: String?) -> DoctorFinding {
        switch facts {
        case .absent(let socket):
            return .ok(.daemon, "no daemon answers (no \(socket)): openings connect by themselves")
        case .stale(let socket):
            return .ok(
                .daemon,
                "no daemon answers on \(socket) (left by a daemon that stopped without removing it): openings connect by themselves"
            )
        case .untrusted(let pid, let uid, let socket):
            return .unavailable(
                .daemon,
                "a process of uid \(uid) (pid \(pid)) listens on \(socket): neither root, \(user.name), the runtime folder's owner, nor the service's user \(ControlTrust.serviceUser); openings ignore it and connect by themselves",
                fix: "stop that process and remove \(socket) (who it is: `ss -xlp | grep control.sock`)"
            )
        case .answered(let daemon, let peerUID, _):
            let who =
                peerUID == user.uid
                ? "this user's own daemon (pid \(daemon.pid))"
                : "the system service (pid \(daemon.pid), uid \(peerUID))"
            var detail = "\(who) serves \(daemon.runtimeDirectory) with \(daemon.configPath): openings go through it"
            if let configPath, configPath != daemon.configPath {
                detail +=
                    "; but this account reads \(configPath), so its openings are declined and connect by themselves"
            }
            // A part that failed since the start: restarting now is a failure, running again a note.
            for part in daemon.parts { detail += "; \(part.sentence)" }
            if let failing = daemon.parts.first(where: { $0.restartIn != nil }) {
                return .unavailable(
                    .daemon,
                    detail,
                    fix:
                        "the daemon opens the \(failing.part) again by itself; if it keeps failing, see its log (journalctl -u gate.service)"
                )
            }
            return .ok(.daemon, detail)
        case .unusable(let socket, let why):
            return .unavailable(
                .daemon,
                "cannot ask who serves \(socket): \(why)",
                fix:
                    "restart the daemon (systemctl restart gate.service, or systemctl --user restart gate-user.service)"
            )
        }
    }
}
