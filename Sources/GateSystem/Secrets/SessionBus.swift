#if canImport(Glibc)
import Glibc
#endif

/// Where a D-Bus client finds the user's session bus, as GLib and sd-bus look for
/// it: `$DBUS_SESSION_BUS_ADDRESS`, else the socket `$XDG_RUNTIME_DIR/bus` that a
/// systemd user session provides. A system service has neither.
public enum SessionBus {
    public static func isPresent(environment: [String: String]) -> Bool {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return true }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            var info = stat()
            if stat(runtime + "/bus", &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { return true }
        }
        return false
    }
}
