import GateCore
import GateSystem

/// Why a desktop notification was not shown, worded as the tail of a sentence.
public enum DesktopNotificationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// There is no session bus to find a notification server on.
    case noSessionBus
    /// libsystemd (sd-bus) cannot be loaded.
    case unavailable(String)
    /// The bus or the notification server failed the call.
    case failed(String)

    public var description: String {
        switch self {
        case .noSessionBus:
            "there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist); "
                + "a system service has none: for notifications run `gate daemon` in the desktop session, as a systemd user service"
        case .unavailable(let why), .failed(let why):
            why
        }
    }
}
