import Foundation
import GateCore
import GateSystem

/// A runtime folder and a state folder of their own (lock, status file, history) under
/// the temporary directory, for an `OpeningPipeline` run in process. Removed in `deinit`.
public final class TemporaryRuntime: Sendable {
    public let directory: String
    public let paths: RuntimePaths

    public init() throws {
        var template = Array((NSTemporaryDirectory() + "/gate-runtime-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw LoopbackSocket.Failure("mkdtemp")
        }
        directory = String(cString: made)
        paths = RuntimePaths(runtimeDirectory: directory + "/run", stateDirectory: directory + "/state")
    }

    deinit {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// What the lock file says now (nil when it is missing or unreadable).
    public var lockRecord: LockRecord? {
        lockFileText.flatMap { LockRecord(json: Array($0.utf8)) }
    }

    /// The lock file's bytes, as text.
    public var lockFileText: String? {
        FileManager.default.contents(atPath: paths.lockFile).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Puts back a lock file's content (what an opener killed at that moment would have left).
    public func writeLockFile(_ text: String) throws {
        try text.write(toFile: paths.lockFile, atomically: false, encoding: .utf8)
    }

    public var status: StatusRecord? { StatusFile.read(paths.statusFile) }

    public func history(limit: Int = 100) -> [HistoryLog.Entry] { HistoryLog.read(paths.historyFile, limit: limit) }
}

/// Polls `condition` (every few milliseconds of real time) until it holds; false if it
/// still does not after `timeout`, a generous bound, never a measurement: a condition
/// that holds returns at once.
///
/// Two minutes by default because, on a 2-core machine, the cooperative pool has two
/// threads, and the integration tests that run beside these block them in synchronous
/// waits for their child processes: a task can then wait tens of seconds for its turn.
public func eventually(within timeout: Duration = .seconds(120), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return true
}
