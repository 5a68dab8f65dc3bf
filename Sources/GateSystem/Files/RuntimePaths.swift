import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Where the lock, the status file and the history live (docs/CONTRACT.md#the-runtime-and-state-folders).
public struct RuntimePaths: Sendable, Hashable {
    /// Holds `lock` and `status.json`, shared by the service, shell users and widgets.
    public var runtimeDirectory: String
    /// Holds `history.jsonl`.
    public var stateDirectory: String

    public var lockFile: String { runtimeDirectory + "/lock" }
    public var statusFile: String { runtimeDirectory + "/status.json" }
    /// The daemon's control socket (docs/CONTRACT.md#the-control-socket): openings handed to its warm link.
    public var controlSocket: String { runtimeDirectory + "/control.sock" }
    public var historyFile: String { stateDirectory + "/history.jsonl" }

    public init(runtimeDirectory: String, stateDirectory: String) {
        self.runtimeDirectory = runtimeDirectory
        self.stateDirectory = stateDirectory
    }

    /// The folder the deploy files make for the service, shell users and widgets.
    public static let sharedRuntimeDirectory = "/run/gate"

    /// `$GATE_RUNTIME_DIR`, else `/run/gate` when it exists, else `$XDG_RUNTIME_DIR/gate`;
    /// `$GATE_STATE_DIR`, else `/var/lib/gate` when writable, else `$XDG_STATE_HOME/gate`
    /// (`~/.local/state/gate`).
    ///
    /// A `/run/gate` that exists but that this account cannot use (not in group `gate`,
    /// or not logged in again since joining it) is an error (docs/CONTRACT.md#the-runtime-and-state-folders): a private lock
    /// beside the service's would let two openings run at once.
    public static func resolve(
        environment: [String: String] = ProcessEnvironment.current()
    ) -> Result<RuntimePaths, RuntimePathError> {
        let runtime: String
        let shared = sharedRuntimeDirectory
        var info = stat()
        if let explicit = nonEmpty(environment["GATE_RUNTIME_DIR"]) {
            runtime = explicit
        } else if lstat(shared, &info) == 0 {
            guard isUsableDirectory(shared) else {
                return .failure(
                    RuntimePathError(
                        message: "cannot use \(shared): it exists but \(accountDescription()) cannot "
                            + "read, write and search it, so openings from this account would not share the lock and the status "
                            + "with the service; join the group gate (sudo usermod -aG gate \(accountName() ?? "USER"), then log in "
                            + "again) or set $GATE_RUNTIME_DIR",
                        unusableShared: shared
                    )
                )
            }
            runtime = shared
        } else if let xdg = nonEmpty(environment["XDG_RUNTIME_DIR"]) {
            runtime = xdg + "/gate"
        } else {
            return .failure(
                RuntimePathError(
                    message: "no runtime folder: /run/gate is missing and $XDG_RUNTIME_DIR is not set "
                        + "(install the deploy files, join the group gate, or set $GATE_RUNTIME_DIR)"
                )
            )
        }
        let state: String
        if let explicit = nonEmpty(environment["GATE_STATE_DIR"]) {
            state = explicit
        } else if isWritableDirectory("/var/lib/gate") {
            state = "/var/lib/gate"
        } else if let xdg = nonEmpty(environment["XDG_STATE_HOME"]) {
            state = xdg + "/gate"
        } else if let home = nonEmpty(environment["HOME"]) {
            state = home + "/.local/state/gate"
        } else {
            return .failure(
                RuntimePathError(
                    message:
                        "no state folder: /var/lib/gate is not writable and neither $XDG_STATE_HOME nor $HOME is set "
                        + "(join the group gate, or set $GATE_STATE_DIR)"
                )
            )
        }
        return .success(RuntimePaths(runtimeDirectory: runtime, stateDirectory: state))
    }

    /// Creates the folders if missing: private to the user when `gate` makes them
    /// itself (the shared `/run/gate` comes from the deploy files, group `gate`, 2770).
    public func prepare() -> Result<Void, RuntimePathError> {
        for directory in [runtimeDirectory, stateDirectory] {
            if let failure = Self.makeDirectories(directory) {
                return .failure(
                    RuntimePathError(
                        message: "cannot create \(directory): \(failure) "
                            + "(check who owns the folder above it, or set $GATE_RUNTIME_DIR and $GATE_STATE_DIR)"
                    )
                )
            }
        }
        return .success(())
    }

    public static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    /// A folder whose lock and files this account can use: read (to lock the folder
    /// itself), write and search.
    static func isUsableDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR && access(path, R_OK | W_OK | X_OK) == 0
    }

    /// `nobody (uid 65534)`.
    static func accountDescription() -> String {
        accountName().map { "\($0) (uid \(geteuid()))" } ?? "uid \(geteuid())"
    }

    static func accountName() -> String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    public static func isWritableDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR && access(path, W_OK | X_OK) == 0
    }

    /// `mkdir -p` with mode 0700 for what it creates.
    static func makeDirectories(_ path: String) -> SystemError? {
        if isWritableDirectory(path) { return nil }
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                return SystemError("mkdir")
            }
        }
        return nil
    }
}
