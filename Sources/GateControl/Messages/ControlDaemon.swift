import GateCore

/// Who serves a runtime folder's control socket (the `hello` banner and the `who` reply).
public struct ControlDaemon: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var configPath: String
    public var runtimeDirectory: String
    /// The daemon's parts that failed since it started (docs/CONTRACT.md#gate-daemon).
    public var parts: [PartReport]

    public init(pid: Int32, uid: UInt32, configPath: String, runtimeDirectory: String, parts: [PartReport] = []) {
        self.pid = pid
        self.uid = uid
        self.configPath = configPath
        self.runtimeDirectory = runtimeDirectory
        self.parts = parts
    }
}
