import Foundation
import GateTestSupport
import Testing

/// What `MosquittoBroker.runTool`, the helper that runs a command-line tool to completion,
/// promises about the child and about this process once it is done.
@Suite("Children run to completion start clean and leave nothing behind")
struct SpawnTests {
    @Test("A child starts with no signal blocked although the test's thread blocks some")
    func emptySignalMask() throws {
        let status = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        let own = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }
        let run = try MosquittoBroker.runTool("/bin/grep", ["^SigBlk:", "/proc/self/status"])
        #expect(run.status == 0, "\(run.summary)")
        #expect(run.stdout == "SigBlk:\t0000000000000000\n", "\(run.summary)(the test's thread: \(own ?? "?"))")
    }

    @Test("A finished child leaves this process nothing open on its output")
    func outputClosed() throws {
        let run = try MosquittoBroker.runTool(
            "/bin/sh",
            ["-c", "readlink /proc/self/fd/1; readlink /proc/self/fd/2 >&2"]
        )
        #expect(run.status == 0, "\(run.summary)")
        for target in [run.stdout, run.stderr].map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }) {
            let open =
                target.hasPrefix("pipe:[")
                ? openDescriptors(named: target)
                : openDescriptors(under: URL(fileURLWithPath: target).deletingLastPathComponent())
            #expect(!target.isEmpty, "\(run.summary)")
            #expect(open.isEmpty, "still open on the child's \(target)")
        }
    }

    @Test("A child past its timeout is killed and the run fails")
    func timeoutKills() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-spawn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("pid").path
        #expect(throws: (any Error).self) {
            try MosquittoBroker.runTool("/bin/sh", ["-c", "echo $$ > \(pidFile); exec sleep 30"], timeout: .seconds(3))
        }
        let pid = try #require(
            Int32(String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        )
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the timed-out child \(pid) still exists")
    }
}
