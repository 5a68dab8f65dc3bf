import Foundation

#if canImport(Glibc)
import Glibc
#endif

// Child processes, loopback ports and the command-line tools behind `MosquittoBroker`
// and `MQTTRecorder`. Everything here is bounded: no wait without a deadline.

extension MosquittoBroker {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// What a finished command-line tool (mosquitto_pub, openssl…) returned.
    public struct ToolRun: Sendable {
        public var arguments: [String]
        public var status: Int32
        public var stdout: String
        public var stderr: String
        public var summary: String {
            "\(arguments.joined(separator: " ")): exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)"
        }
    }

    /// Runs `executable` to completion (at most `timeout`; killed and reported as a failure after
    /// that). A non-zero exit is returned, not thrown: callers decide what they expected.
    public static func runTool(
        _ executable: String,
        _ arguments: [String],
        timeout: Duration = .seconds(15)
    ) throws -> ToolRun {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("gate-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("stdout")
        let err = scratch.appendingPathComponent("stderr")
        let child = try Child(executable, arguments, stdout: out, stderr: err, watchdog: false)
        guard child.waitForExit(within: timeout) else {
            child.terminate(grace: .zero)
            throw Failure("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout)")
        }
        return ToolRun(
            arguments: [executable] + arguments,
            status: child.process.terminationStatus,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? ""
        )
    }

    /// A background child process. With `watchdog`, a tiny `sh` loop SIGKILLs it as soon as the
    /// test process is gone (even after a crash or SIGKILL, when no `deinit` runs), so that no
    /// mosquitto or mosquitto_sub outlives the tests.
    public final class Child: @unchecked Sendable {
        public let process = Process()
        private var guardian: Process?

        public init(_ executable: String, _ arguments: [String], stdout: URL?, stderr: URL?, watchdog: Bool) throws {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try Self.appendingHandle(stdout)
            process.standardError = stdout == stderr ? process.standardOutput : try Self.appendingHandle(stderr)
            try runWithSignalsUnblocked(process)
            closeFileStreams(of: process)
            guard watchdog else { return }
            // on failure, deinit kills the child
            guardian = try startOrphanGuard(killing: process.processIdentifier, label: "gate-test-watchdog")
        }

        deinit { terminate(grace: .seconds(2)) }

        public var pid: Int32 { process.processIdentifier }
        public var isRunning: Bool { process.isRunning }

        /// Polls until the child has been reaped; false if it still runs at the deadline.
        public func waitForExit(within timeout: Duration) -> Bool {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning {
                if ContinuousClock.now >= deadline { return false }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return true
        }

        public func send(_ signal: Int32) {
            if process.isRunning { Glibc.kill(process.processIdentifier, signal) }
        }

        /// SIGTERM, up to `grace` to exit, then SIGKILL; the watchdog goes too.
        public func terminate(grace: Duration) {
            if grace > .zero {
                send(SIGTERM)
                if !waitForExit(within: grace) { send(SIGKILL) }
            } else {
                send(SIGKILL)
            }
            _ = waitForExit(within: .seconds(5))
            if let guardian, guardian.isRunning {
                Glibc.kill(guardian.processIdentifier, SIGKILL)
            }
        }

        private static func appendingHandle(_ url: URL?) throws -> FileHandle {
            guard let url else { return FileHandle.nullDevice }
            if !FileManager.default.fileExists(atPath: url.path) {
                _ = FileManager.default.createFile(atPath: url.path, contents: nil)
            }
            let handle = try FileHandle(forWritingTo: url)
            handle.seekToEndOfFile()
            return handle
        }
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read, closed).
    /// Someone else may take it before mosquitto binds it: callers retry on "Address already in use".
    static func freeLoopbackPort() throws -> UInt16 {
        try LoopbackSocket.freePort(.tcp)
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` right now.
    public static func acceptsConnections(port: UInt16) -> Bool {
        LoopbackSocket.acceptsConnections(port: port)
    }
}
