import Foundation

/// Whether every thread of `pid` is stopped (state `T` in /proc). SIGSTOP reaches a
/// process's threads one after another: a test that needs the process frozen waits for this.
public func isStopped(_ pid: Int32) -> Bool {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return false }
    return tasks.allSatisfy { task in
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("T")
    }
}
