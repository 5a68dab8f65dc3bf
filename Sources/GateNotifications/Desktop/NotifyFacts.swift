import GateCore

/// What the session bus said about the desktop notification server (`[notify]`).
public enum NotifyFacts: Sendable, Hashable {
    /// `GetServerInformation` answered: the server's name, vendor and version.
    case server(name: String, vendor: String, version: String)
    /// No session bus to look on (neither `$DBUS_SESSION_BUS_ADDRESS` nor
    /// `$XDG_RUNTIME_DIR/bus`).
    case noSessionBus
    /// The bus has no owner of `org.freedesktop.Notifications`.
    case noServer
    /// Anything else: sd-bus missing, the bus refused the connection, the server
    /// failed the call. `why` names the call and its words.
    case failed(why: String)
}
