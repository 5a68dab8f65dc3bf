import Foundation
import GateSystem
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Protocol v2's counters in the state folder (docs/CONTRACT.md#protocol-v2s-counters): real
/// processes (`gate-counter-probe`) that draw them under the opening lock, restart, and are
/// killed between reserving a block and using it; hostile files in their place.
@Suite("Protocol v2's counters across restarts and crashes")
struct CounterStoreTests {
    /// A state folder and a runtime folder of their own, and the log the probes append to.
    final class Folders {
        let root: URL
        var state: String { root.appendingPathComponent("state").path }
        var runtime: String { root.appendingPathComponent("run").path }
        var log: String { root.appendingPathComponent("used.log").path }
        var counterFile: String { state + "/esp32-counter-1" }

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("gate-counters-\(UUID().uuidString)")
            for folder in ["state", "run"] {
                try FileManager.default.createDirectory(
                    at: root.appendingPathComponent(folder),
                    withIntermediateDirectories: true
                )
            }
        }

        deinit { try? FileManager.default.removeItem(at: root) }

        /// Every counter the probes used, in the order they used them.
        func used() throws -> [UInt64] {
            guard FileManager.default.fileExists(atPath: log) else { return [] }
            return try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map {
                try #require(UInt64($0))
            }
        }

        func mark() throws -> String { try String(contentsOfFile: counterFile, encoding: .utf8) }
    }

    static func probe() throws -> String {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return URL(fileURLWithPath: executable).deletingLastPathComponent()
            .appendingPathComponent("gate-counter-probe").path
    }

    /// Runs one probe process to its end.
    private func draw(_ count: Int, _ folders: Folders, keyID: UInt8 = 1) throws -> GateRun {
        try SessionCommand.run(
            try Self.probe(),
            [folders.state, folders.runtime, String(keyID), String(count), folders.log],
            stdin: nil,
            environment: ProcessInfo.processInfo.environment
        )
    }

    private func expectIncreasing(_ counters: [UInt64], sourceLocation: SourceLocation = #_sourceLocation) {
        for (earlier, later) in zip(counters, counters.dropFirst()) {
            #expect(earlier < later, "\(earlier) then \(later) in \(counters)", sourceLocation: sourceLocation)
        }
    }

    @Test func countersIncreaseAcrossRestartsAndBlocks() throws {
        let folders = try Folders()
        for count in [5, 70, 1, 64, 3] {
            let run = try draw(count, folders)
            #expect(run.status == 0, "\(run.summary)")
        }
        let used = try folders.used()
        #expect(used.count == 143)
        #expect(used.first == 1, "counters start at 1")
        expectIncreasing(used)
        // The mark is written before a block is used: never below a counter that left.
        let mark = try #require(UInt64(try folders.mark().dropLast()))
        #expect(try folders.mark().hasSuffix("\n") && mark >= used.last!)
        var info = stat()
        #expect(lstat(folders.counterFile, &info) == 0 && info.st_mode & 0o777 == 0o660)
    }

    @Test func aProcessKilledBetweenReservingAndUsingNeverMakesACounterRepeat() throws {
        let folders = try Folders()
        #expect(try draw(3, folders).status == 0)
        // Killed right after drawing a counter from a block it reserved, and after using
        // all but the last counter of one: the counter drawn and never used is not used
        // later either, nor anything below it.
        var drawnNeverUsed: [UInt64] = []
        for hangAfter in [1, 64] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try Self.probe())
            process.arguments = [folders.state, folders.runtime, "1", "100", folders.log, String(hangAfter)]
            let exited = try SessionCommand.spawn(process)
            let hang = folders.log + ".hang"
            let deadline = ContinuousClock.now + .seconds(30)
            while !FileManager.default.fileExists(atPath: hang), ContinuousClock.now < deadline, process.isRunning {
                usleep(10_000)
            }
            let drawn = try #require(UInt64(try String(contentsOfFile: hang, encoding: .utf8).dropLast()))
            drawnNeverUsed.append(drawn)
            kill(process.processIdentifier, SIGKILL)
            #expect(SessionCommand.wait(exited, timeout: .seconds(10)))
            #expect(process.terminationReason == .uncaughtSignal)
            try FileManager.default.removeItem(atPath: hang)
            let before = try folders.used().count
            #expect(try draw(2, folders).status == 0)
            let after = try folders.used().dropFirst(before)
            #expect(after.count == 2 && after.allSatisfy { $0 > drawn }, "\(after) after \(drawn) was drawn")
        }
        let used = try folders.used()
        #expect(used.count == 3 + 2 + 63 + 2)
        #expect(Set(used).count == used.count, "a counter was used twice: \(used)")
        #expect(Set(used).isDisjoint(with: drawnNeverUsed))
        expectIncreasing(used)
    }

    @Test(arguments: [
        "", "\n", "12", "12 \n", " 12\n", "+12\n", "-5\n", "0012\n", "12abc\n", "1e3\n", "12\n\n",
        "18446744073709551616\n", "99999999999999999999999999\n",
    ])
    func aFileThatIsNotAMarkIsAnErrorNamingItNeverANewStart(text: String) throws {
        let folders = try Folders()
        try text.write(toFile: folders.counterFile, atomically: true, encoding: .utf8)
        let run = try draw(1, folders)
        #expect(run.status == 1, "\(run.summary)")
        #expect(run.stderr.contains("cannot use \(folders.counterFile)"), "\(run.stderr)")
        #expect(run.stderr.contains("never starts the counters again"), "\(run.stderr)")
        #expect(try folders.used().isEmpty, "no counter may be used")
        #expect(try String(contentsOfFile: folders.counterFile, encoding: .utf8) == text, "left as it was")
    }

    @Test func aLinkAFIFOOrAFolderInItsPlaceIsNeverFollowed() throws {
        for kind in ["link", "fifo", "folder"] {
            let folders = try Folders()
            let target = folders.root.appendingPathComponent("elsewhere").path
            try "5000\n".write(toFile: target, atomically: true, encoding: .utf8)
            switch kind {
            case "link": #expect(symlink(target, folders.counterFile) == 0)
            case "fifo": #expect(mkfifo(folders.counterFile, 0o600) == 0)
            default:
                try FileManager.default.createDirectory(atPath: folders.counterFile, withIntermediateDirectories: false)
            }
            let run = try draw(1, folders)
            #expect(run.status == 1, "\(kind): \(run.summary)")
            #expect(run.stderr.contains("cannot use \(folders.counterFile)"), "\(kind): \(run.stderr)")
            #expect(try folders.used().isEmpty)
            #expect(try String(contentsOfFile: target, encoding: .utf8) == "5000\n", "the link's target is untouched")
        }
    }

    @Test func aFullCounterSaysSo() throws {
        let folders = try Folders()
        try "\(UInt64.max - 10)\n".write(toFile: folders.counterFile, atomically: true, encoding: .utf8)
        let run = try draw(1, folders)
        #expect(run.status == 1 && run.stderr.contains("leaves no room"), "\(run.summary)")
        #expect(try folders.used().isEmpty)
    }

    @Test func eachKeyIDHasItsOwnCounters() throws {
        let folders = try Folders()
        #expect(try draw(2, folders, keyID: 1).status == 0)
        #expect(try draw(2, folders, keyID: 7).status == 0)
        #expect(try folders.used() == [1, 2, 1, 2])
        #expect(FileManager.default.fileExists(atPath: folders.state + "/esp32-counter-7"))
    }

    /// Two stores with the same key in one process, as a daemon's and a CLI's: each draw
    /// under the lock re-reads the mark, so a block is dropped once the other reserved.
    @Test func twoStoresOfOneKeyNeverInterleaveOrRepeat() throws {
        let folders = try Folders()
        let daemon = CounterStore(stateDirectory: folders.state, keyID: 1)
        let cli = CounterStore(stateDirectory: folders.state, keyID: 1)
        var used: [UInt64] = []
        for store in [daemon, cli, daemon, daemon, cli, daemon] {
            let lock = try acquire(folders)
            used.append(try store.next(holding: lock))
            lock.release()
        }
        #expect(used == [1, 65, 129, 130, 193, 257])
    }

    @Test func aMarkLoweredBehindTheStoresBackIsAnError() throws {
        let folders = try Folders()
        let store = CounterStore(stateDirectory: folders.state, keyID: 1)
        let lock = try acquire(folders)
        #expect(try store.next(holding: lock) == 1)
        try "10\n".write(toFile: folders.counterFile, atomically: true, encoding: .utf8)
        #expect(throws: CounterStoreError(path: folders.counterFile, problem: .wentBack(from: 64, to: 10))) {
            try store.next(holding: lock)
        }
    }

    private func acquire(_ folders: Folders) throws -> OpeningLock {
        let acquisition = try OpeningLock.acquire(
            path: folders.runtime + "/lock",
            pid: getpid(),
            source: "test",
            since: "now"
        ).get()
        guard case .acquired(let lock) = acquisition else { throw SecretSession.Failure("the lock is held") }
        return lock
    }
}
