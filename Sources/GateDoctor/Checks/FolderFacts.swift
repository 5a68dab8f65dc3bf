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
