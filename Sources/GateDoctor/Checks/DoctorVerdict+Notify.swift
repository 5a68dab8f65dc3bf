import GateNotifications

extension DoctorVerdict {
    /// The desktop notification server that `[notify]` needs: asked on the session
    /// bus the way the daemon will ask it, without showing anything.
    public static func notify(_ facts: NotifyFacts, file: String) -> DoctorFinding {
        switch facts {
        case .server(let name, let vendor, let version):
            let maker = vendor.isEmpty || vendor == name ? "" : " (\(vendor))"
            let release = version.isEmpty ? "" : " \(version)"
            return .ok(
                .notify,
                "the notification server \(name)\(release)\(maker) answers on the session bus: the daemon's notices go there"
            )
        case .noSessionBus:
            return .unavailable(
                .notify,
                "[notify] is set in \(file), but there is no D-Bus session bus here ($DBUS_SESSION_BUS_ADDRESS is not set "
                    + "and $XDG_RUNTIME_DIR/bus does not exist): a daemon started like this shows no notifications",
                fix: "run the daemon in the desktop session, as a systemd user service "
                    + "(`systemctl --user enable --now gate-user.service`), and `gate doctor` from that session"
            )
        case .noServer:
            return .unavailable(
                .notify,
                "[notify] is set in \(file), but no notification server runs in this session "
                    + "(nobody owns org.freedesktop.Notifications on the session bus)",
                fix: "start the desktop's notification server (the desktop's own, dunst, mako), "
                    + "or remove [notify] from \(file)"
            )
        case .failed(let why):
            return .unavailable(
                .notify,
                "[notify] is set in \(file), but the notification server cannot be asked: \(why)",
                fix: "start the desktop's notification server, or remove [notify] from \(file) "
                    + "(`busctl --user status` shows the session bus)"
            )
        }
    }
}
