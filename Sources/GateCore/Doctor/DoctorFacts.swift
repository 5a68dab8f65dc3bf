/// What `gate doctor` gathered from the system, in plain values, so that the
/// judgement (`DoctorVerdict`) can be tested without the system.

/// The account the checks ran as: fix hints name it (`sudo usermod -aG gate alice`).
public struct DoctorUser: Sendable, Hashable {
    public var name: String
    public var uid: UInt32

    public init(name: String, uid: UInt32) {
        self.name = name
        self.uid = uid
    }

    var described: String { "\(name) (uid \(uid))" }
}

/// Where the configuration search ended.
public enum ConfigFacts: Sendable, Equatable {
    case valid(path: String, origin: String)
    /// No file in any searched place. `suggested` is the user's own path, if there is one.
    case notFound(searched: [String], suggested: String?)
    /// A file was chosen but cannot be read, parsed or validated.
    case invalid(path: String, problems: [ConfigProblem])
}

/// A folder `gate` writes to (the runtime folder, the state folder).
public struct FolderFacts: Sendable, Hashable {
    /// Which rule of docs/CONTRACT.md#the-runtime-and-state-folders chose the folder.
    public enum Origin: Sendable, Hashable {
        /// An environment variable named it (`GATE_RUNTIME_DIR`).
        case environment(String)
        /// The deploy files' shared folder (`/run/gate`, `/var/lib/gate`), group `gate`.
        case shared
        /// The account's own fallback (`$XDG_RUNTIME_DIR/gate`, `~/.local/state/gate`).
        case personal
    }

    public enum State: Sendable, Hashable {
        case writable
        /// `why` is the failing call and its errno words.
        case notWritable(why: String)
        case notDirectory
        /// Not there yet: `gate` makes it on first use when `ancestor`, the nearest
        /// existing parent, is writable.
        case missing(ancestor: String, creatable: Bool)
    }

    public var path: String
    public var origin: Origin
    public var state: State

    public init(path: String, origin: Origin, state: State) {
        self.path = path
        self.origin = origin
        self.state = state
    }
}

/// The opening lock in the runtime folder.
public enum LockFacts: Sendable, Hashable {
    /// No lock file yet: the first opening makes it.
    case absent
    case usable(heldNow: Bool)
    /// Present but this account cannot open it for reading and writing.
    case notUsable(path: String, why: String)
}

/// The ESP32's UDP address as an opening would judge it.
public enum UDPFacts: Sendable, Hashable {
    case verdict(IPAddress, LinkVerdict)
    case unresolved(String)
    /// The name service did not answer within `udp.timeout`.
    case lookupTimedOut(Duration)
    /// The interface table could not be read: an opening then treats the ESP32 as off-link.
    case noInterfaceTable(String)
}

/// The MQTT password lookup (never the password itself).
public enum PasswordFacts: Sendable, Hashable {
    case found(source: String, location: String?)
    /// Every source asked; each one's note (`the Secret Service: no entry`).
    case missing(notes: [String])
    /// A source has one that cannot be used.
    case unusable(source: String, why: String)
}

/// A plain TCP connection to the broker, with nothing sent.
public enum TCPFacts: Sendable, Hashable {
    case connected(Duration)
    case failed(String)
    case noAnswer
}

/// An MQTT CONNECT (over TLS when configured) up to the broker's CONNACK; nothing
/// is subscribed or published.
public enum BrokerFacts: Sendable, Hashable {
    case accepted(Duration)
    /// CONNACK with a refusal: `words` are the broker's (`Connection Refused: not authorised.`).
    case refused(code: Int32, words: String)
    case tlsFailed(String)
    case connectFailed(String)
    /// The broker closed the connection before any CONNACK.
    case closed(String)
    case noAnswer
    /// The client could not even be prepared (libmosquitto missing, a CA file it refuses).
    case setupFailed(String)

    /// CONNACK codes of MQTT 3.1.1: the client id, and the login itself, refused.
    public static let identifierRejected: Int32 = 2
    public static let badCredentials: Int32 = 4
    public static let notAuthorised: Int32 = 5
}

/// Requesting the button's GPIO line (and releasing it at once).
public enum ButtonFacts: Sendable, Hashable {
    case opened
    /// Another consumer holds the line; `daemonPID` when that is a running `gate daemon`.
    case busy(daemonPID: Int32?, words: String)
    /// The chip is not there; `present` lists the chips this machine has.
    case noChip(words: String, present: [String])
    case permissionDenied(String)
    case noLine(String)
    case libraryMissing(String)
    case failed(String)
}

/// Who answers on the runtime folder's control socket.
public enum DaemonFacts: Sendable, Hashable {
    /// No `control.sock`.
    case absent(socket: String)
    /// A socket nobody answers on (left by a daemon that was killed).
    case stale(socket: String)
    /// A daemon `gate open` trusts answered `who`; `peerUID` is the kernel's word
    /// for who listens.
    case answered(ControlDaemon, peerUID: UInt32, socket: String)
    /// A listener of another user: `gate open` ignores it.
    case untrusted(pid: Int32, uid: UInt32, socket: String)
    /// Something else is there, or the exchange failed.
    case unusable(socket: String, why: String)
}

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
