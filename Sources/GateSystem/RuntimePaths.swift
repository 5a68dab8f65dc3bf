#if canImport(Glibc)
import Glibc
#endif
import GateCore

/// Where the lock, the status file and the history live (SPEC §6).
public struct RuntimePaths: Sendable, Hashable {
    /// Holds `lock` and `status.json`, shared by the service, shell users and widgets.
    public var runtimeDirectory: String
    /// Holds `history.jsonl`.
    public var stateDirectory: String

    public var lockFile: String { runtimeDirectory + "/lock" }
    public var statusFile: String { runtimeDirectory + "/status.json" }
    public var historyFile: String { stateDirectory + "/history.jsonl" }

    public init(runtimeDirectory: String, stateDirectory: String) {
        self.runtimeDirectory = runtimeDirectory
        self.stateDirectory = stateDirectory
    }

    /// `$GATE_RUNTIME_DIR`, else `/run/gate` when it exists and is writable, else
    /// `$XDG_RUNTIME_DIR/gate`; `$GATE_STATE_DIR`, else `/var/lib/gate` when writable,
    /// else `$XDG_STATE_HOME/gate` (`~/.local/state/gate`).
    public static func resolve(environment: [String: String] = ProcessEnvironment.current()) -> Result<RuntimePaths, RuntimePathError> {
        let runtime: String
        if let explicit = nonEmpty(environment["GATE_RUNTIME_DIR"]) {
            runtime = explicit
        } else if isWritableDirectory("/run/gate") {
            runtime = "/run/gate"
        } else if let xdg = nonEmpty(environment["XDG_RUNTIME_DIR"]) {
            runtime = xdg + "/gate"
        } else {
            return .failure(RuntimePathError(message: "no runtime folder: /run/gate is missing or not writable and $XDG_RUNTIME_DIR is not set "
                + "(install the deploy files, join the group gate, or set $GATE_RUNTIME_DIR)"))
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
            return .failure(RuntimePathError(message: "no state folder: /var/lib/gate is not writable and neither $XDG_STATE_HOME nor $HOME is set"))
        }
        return .success(RuntimePaths(runtimeDirectory: runtime, stateDirectory: state))
    }

    /// Creates the folders if missing: private to the user when `gate` makes them
    /// itself (the shared `/run/gate` comes from the deploy files, group `gate`, 2770).
    public func prepare() -> Result<Void, RuntimePathError> {
        for directory in [runtimeDirectory, stateDirectory] {
            if let failure = Self.makeDirectories(directory) {
                return .failure(RuntimePathError(message: "cannot create \(directory): \(failure)"))
            }
        }
        return .success(())
    }

    static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    static func isWritableDirectory(_ path: String) -> Bool {
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

public struct RuntimePathError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
