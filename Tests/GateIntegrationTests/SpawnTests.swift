import Foundation
import Testing
import GateTestSupport

/// What the helpers that run a child to completion (`GateRunner.run`, `MosquittoBroker.runTool`)
/// promise about the child and about this process once it is done.
@Suite("Children run to completion start clean and leave nothing behind")
struct SpawnTests {
    @Test("A child starts with no signal blocked although the test's thread blocks some")
    func emptySignalMask() throws {
        let status = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        let own = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }
        print("test thread \(own ?? "SigBlk: ?")")
        let run = try MosquittoBroker.runTool("/bin/grep", ["^SigBlk:", "/proc/self/status"])
        #expect(run.status == 0, "\(run.summary)")
        #expect(run.stdout == "SigBlk:\t0000000000000000\n", "\(run.summary)")
    }

    @Test("A child gets only its three standard streams")
    func noInheritedDescriptors() throws {
        let run = try MosquittoBroker.runTool("/bin/sh", ["-c", "cd /proc/self/fd && echo *"])
        #expect(run.status == 0, "\(run.summary)")
        // The shell's own glob of its fd folder opens no descriptor that stays listed.
        #expect(run.stdout == "0 1 2\n", "\(run.summary)")
    }

    @Test("A finished child leaves this process no end of its output pipes")
    func pipesClosed() throws {
        let run = try MosquittoBroker.runTool("/bin/sh", ["-c", "readlink /proc/self/fd/1; readlink /proc/self/fd/2 >&2"])
        #expect(run.status == 0, "\(run.summary)")
        let pipes = [run.stdout, run.stderr].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        for pipe in pipes {
            #expect(pipe.hasPrefix("pipe:["), "\(run.summary)")
            #expect(openDescriptors(named: pipe).isEmpty, "our end of \(pipe) is still open")
        }
    }

    @Test("A child past its timeout is killed and the run fails")
    func timeoutKills() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gate-spawn-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("pid").path
        #expect(throws: (any Error).self) {
            try MosquittoBroker.runTool("/bin/sh", ["-c", "echo $$ > \(pidFile); exec sleep 30"], timeout: .seconds(1))
        }
        let pid = try #require(Int32(String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the timed-out child \(pid) still exists")
    }
}
