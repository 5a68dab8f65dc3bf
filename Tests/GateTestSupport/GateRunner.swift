import Foundation

/// Runs the real `gate` binary built next to the test executable, the way a user
/// or a script would, and captures what it printed.
public struct GateRun {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var wall: Duration

    public init(status: Int32, stdout: String, stderr: String, wall: Duration) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
        self.wall = wall
    }

    /// The single JSON object of `--json`, parsed.
    public func json() throws -> [String: Any] {
        let trimmed = stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.contains("\n") else { throw GateRunner.Failure("--json printed more than one line: \(stdout)") }
        guard let object = try JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any] else {
            throw GateRunner.Failure("not a JSON object: \(stdout)")
        }
        return object
    }

    public var summary: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

public enum GateRunner {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public static func binary(_ name: String = "gate") throws -> URL {
        let testExecutable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let candidate = URL(fileURLWithPath: testExecutable).deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw Failure("\(name) is not built at \(candidate.path)")
        }
        return candidate
    }

    /// An environment without the user's own configuration, so that a test only ever
    /// reads the files it wrote.
    public static func isolatedEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        // Nothing of the machine's own: no config, no credentials, no desktop keyring.
        for key in [
            "GATE_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "JOURNAL_STREAM", "CREDENTIALS_DIRECTORY",
            "DBUS_SESSION_BUS_ADDRESS",
        ] {
            environment[key] = nil
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("gate-home-\(UUID().uuidString)")
        environment["HOME"] = scratch.path
        // Each run gets its own lock, status and history unless a test shares them on purpose.
        environment["GATE_RUNTIME_DIR"] = scratch.appendingPathComponent("run").path
        environment["GATE_STATE_DIR"] = scratch.appendingPathComponent("state").path
        environment["XDG_RUNTIME_DIR"] = nil
        environment.merge(extra) { _, new in new }
        return environment
    }

    /// Runs `gate` with `arguments` and waits at most `timeout` (then kills it and fails).
    public static func run(
        _ arguments: [String],
        environment: [String: String] = isolatedEnvironment(),
        timeout: Duration = .seconds(30)
    ) throws -> GateRun {
        let process = try start(arguments, environment: environment)
        return try process.finish(timeout: timeout)
    }

    public static func start(
        _ arguments: [String],
        environment: [String: String] = isolatedEnvironment()
    ) throws -> RunningGate {
        try RunningGate(arguments: arguments, environment: environment)
    }
}

/// A `gate` process that is still running, for tests that act while it waits. Spawned
/// with an empty signal mask (Spawn.swift), as a shell or systemd would start it, so that
/// a test's SIGTERM reaches it; killed if the test ends without finishing it.
public final class RunningGate {
    public let process = Process()
    public let directory: URL
    private let stdoutURL: URL
    private let stderrURL: URL
    private let exited = DispatchSemaphore(value: 0)
    private let started = ContinuousClock.now

    public init(arguments: [String], environment: [String: String]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gate-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutURL = directory.appendingPathComponent("stdout")
        stderrURL = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = try GateRunner.binary()
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try runWithSignalsUnblocked(process)
        closeFileStreams(of: process)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGCONT)
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 5)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    public var pid: Int32 { process.processIdentifier }

    public func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Whether a signal ended the process (then `finish`'s status is its number).
    public var endedBySignal: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    public func finish(timeout: Duration) throws -> GateRun {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            process.interrupt()
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 5)
            throw GateRunner.Failure("gate \(process.arguments ?? []) did not finish within \(timeout)")
        }
        let wall = ContinuousClock.now - started
        defer { try? FileManager.default.removeItem(at: directory) }
        return GateRun(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "",
            wall: wall
        )
    }
}

/// A configuration file in a fresh temporary folder.
public struct TestConfig {
    public let directory: URL
    public let path: String

    public init(_ text: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gate-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("gate.toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// `[udp]` pointing at a host and port, with optional extra lines.
    public static func udp(host: String, port: UInt16, extra: String = "") throws -> TestConfig {
        try TestConfig(
            """
            [udp]
            host = "\(host)"
            port = \(port)
            \(extra)
            """
        )
    }
}
