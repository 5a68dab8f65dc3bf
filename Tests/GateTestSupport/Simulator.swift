import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A running `esp32-sim`, launched from the build folder for one test.
///
///     let sim = try Simulator(["--hold-ms", "200"])            // 127.0.0.1, free port
///     let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
///     ...
///     #expect(try sim.activations().count == 1)
///     #expect(try sim.stop() == .exited(0))
///
/// The simulator binds port 0 and the helper reads the port it got from the
/// "listening on udp HOST:PORT" log line: no window in which another process could take a
/// port chosen in advance. With `--fault udp-off` there is no such line: `listensOnUDP` is
/// false and `udpPort` 0. With MQTT, `ready` means the broker acknowledged the subscription. Its stderr goes to a file (never a pipe that could fill up and
/// stall it); its trigger log is a fresh file in a per-simulator temporary folder, removed
/// together with the process in `deinit`.
public final class Simulator {
    public enum Termination: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let code): "exit \(code)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    /// One line of the trigger log. `protocolVersion`, `keyID` and `counter` come with
    /// `--protocol 2` (the last two for a v2 open only).
    public struct Activation: Decodable, Equatable {
        public let via: String
        public let at: String
        public let from: String?
        public let payload: String?
        public let protocolVersion: Int?
        public let keyID: UInt8?
        public let counter: UInt64?

        enum CodingKeys: String, CodingKey {
            case via, at, from, payload, counter
            case protocolVersion = "protocol"
            case keyID = "key_id"
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let arguments: [String]
    /// The address to send triggers to, without brackets (`127.0.0.1`, `::1`).
    /// Empty, and `udpPort` 0, when `--fault udp-off` left UDP out.
    public let udpHost: String
    public let udpPort: UInt16
    public var listensOnUDP: Bool { udpPort != 0 }
    /// The MQTT client id (`esp32-sim-` + 8 hex digits) when MQTT is enabled.
    public let mqttClientID: String?
    /// `HOST:PORT` / `[HOST]:PORT`, as in the gate's configuration and the sim's log.
    public var udpEndpoint: String { udpHost.contains(":") ? "[\(udpHost)]:\(udpPort)" : "\(udpHost):\(udpPort)" }
    public let triggerLogPath: String
    public let directory: URL
    let stderrPath: String
    /// Everything the simulator printed on stdout up to and including `ready`.
    public let stdoutBeforeReady: String

    private let process: Process
    /// Our end of the simulator's stdout: read until `ready`, then left open (a later line must
    /// not meet a closed pipe) until this object goes; `Process` keeps its `Pipe` past that.
    private let stdoutReader: FileHandle
    private let exited = DispatchSemaphore(value: 0)

    /// What /proc/self/fd shows for our end of the stdout pipe (`pipe:[inode]`): a pipe's
    /// inode is not reused while any end is open, so a test can look for it after `deinit`.
    public var stdoutPipeName: String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(stdoutReader.fileDescriptor)")
    }
    private var termination: Termination?

    /// Starts `esp32-sim` with `--udp` (port 0 unless given), `--trigger-log` (a temp file)
    /// and `extraArguments`, and returns once it printed `ready`. `environment` is added to
    /// the test's own (`ESP32_SIM_MQTT_PASSWORD` is passed only when given here). The
    /// default timeout outlasts the simulator's own 10 s limit for the first MQTT connection.
    public init(
        _ extraArguments: [String] = [],
        udp: String = "127.0.0.1:0",
        environment: [String: String] = [:],
        readyTimeout: Duration = .seconds(15)
    ) throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("esp32-sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        triggerLogPath = directory.appendingPathComponent("triggers.jsonl").path
        stderrPath = directory.appendingPathComponent("stderr.log").path
        arguments = ["--udp", udp, "--trigger-log", triggerLogPath] + extraArguments

        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        let stdout = Pipe()
        stdoutReader = stdout.fileHandleForReading
        process = Process()
        process.executableURL = try Self.binary()
        process.arguments = arguments
        process.environment = Self.environment(adding: environment)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        closeFileStreams(of: process)

        let (text, sawReady) = Self.readUntilReady(stdout.fileHandleForReading.fileDescriptor, timeout: readyTimeout)
        stdoutBeforeReady = text
        guard sawReady else {
            let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            Self.kill(process, exited: exited)
            try? stdoutReader.close()  // no deinit for an object that was never whole
            try? FileManager.default.removeItem(at: directory)
            throw Failure(
                description: "esp32-sim \(arguments) did not print ready within \(readyTimeout); "
                    + "stdout: \(text.debugDescription), stderr:\n\(log)"
            )
        }
        // The "listening on" and "connected" lines are written before "ready", so they are in the file by now.
        let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n")
        mqttClientID = lines.lazy.compactMap { $0.firstMatch(of: /connected to MQTT broker \S+ as (esp32-sim-\S+)/) }
            .first.map { String($0.1) }
        if lines.contains(where: { $0.hasPrefix("esp32-sim: udp off") }) {
            udpHost = ""
            udpPort = 0
            return
        }
        guard let line = lines.first(where: { $0.contains("listening on udp ") }),
            let colon = line.lastIndex(of: ":"),
            let port = UInt16(line[line.index(after: colon)...])
        else {
            Self.kill(process, exited: exited)
            try? stdoutReader.close()  // no deinit for an object that was never whole
            try? FileManager.default.removeItem(at: directory)
            throw Failure(description: "no \"listening on udp\" line in esp32-sim's stderr:\n\(log)")
        }
        var host = String(line[line.range(of: "listening on udp ")!.upperBound..<colon])
        if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
        // A wildcard bind is reached through loopback.
        udpHost = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
        udpPort = port
    }

    deinit {
        if termination == nil && process.isRunning {
            Self.kill(process, exited: exited)
        }
        try? stdoutReader.close()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The simulator's stderr so far.
    public var stderrText: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The raw lines of the trigger log (empty when the file does not exist yet).
    public func triggerLogLines() throws -> [String] {
        guard FileManager.default.fileExists(atPath: triggerLogPath) else { return [] }
        return try String(contentsOfFile: triggerLogPath, encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast()  // the text after the final newline; a half line would show up here
            .map(String.init)
    }

    /// The trigger log, one entry per relay activation; throws if a line is not valid JSON.
    public func activations() throws -> [Activation] {
        let text =
            FileManager.default.fileExists(atPath: triggerLogPath)
            ? try String(contentsOfFile: triggerLogPath, encoding: .utf8) : ""
        guard text.isEmpty || text.hasSuffix("\n") else {
            throw Failure(description: "trigger log ends in a partial line: \(text.debugDescription)")
        }
        return try text.split(separator: "\n").map {
            try JSONDecoder().decode(Activation.self, from: Data($0.utf8))
        }
    }

    public var pid: Int32 { process.processIdentifier }

    public func send(signal: Int32) {
        Glibc.kill(process.processIdentifier, signal)
    }

    /// Waits (bounded) for the process to end by itself.
    public func waitForExit(timeout: Duration = .seconds(10)) -> Termination? {
        if let termination { return termination }
        guard exited.wait(timeout: dispatchDeadline(after: timeout)) == .success
        else { return nil }
        let result: Termination =
            process.terminationReason == .exit
            ? .exited(process.terminationStatus) : .signalled(process.terminationStatus)
        termination = result
        return result
    }

    /// SIGTERM (or `signal`), then waits up to `timeout`; SIGKILL and a thrown error if the
    /// simulator does not stop in time.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(10)) throws -> Termination {
        if let termination { return termination }
        send(signal: signal)
        guard let result = waitForExit(timeout: timeout) else {
            Self.kill(process, exited: exited)
            throw Failure(description: "esp32-sim did not exit within \(timeout) of signal \(signal)")
        }
        return result
    }

    /// Runs `esp32-sim` with exactly `arguments` to completion (usage errors, `--help`).
    public static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        timeout: Duration = .seconds(15)
    ) throws
        -> (termination: Termination, stdout: String, stderr: String)
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("esp32-sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("stdout")
        let err = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = try binary()
        process.arguments = arguments
        process.environment = Self.environment(adding: environment)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        closeFileStreams(of: process)
        guard exited.wait(timeout: dispatchDeadline(after: timeout)) == .success else {
            kill(process, exited: exited)
            throw Failure(description: "esp32-sim \(arguments) did not exit within \(timeout)")
        }
        let termination: Termination =
            process.terminationReason == .exit
            ? .exited(process.terminationStatus) : .signalled(process.terminationStatus)
        return (termination, try String(contentsOf: out, encoding: .utf8), try String(contentsOf: err, encoding: .utf8))
    }

    /// The built `esp32-sim`: `$ESP32_SIM_BINARY`, else next to the test executable
    /// (SwiftPM puts all products of a build in one folder, e.g. `.build/debug`).
    public static func binary() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["ESP32_SIM_BINARY"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let testExecutable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let candidate = URL(fileURLWithPath: testExecutable).deletingLastPathComponent()
            .appendingPathComponent("esp32-sim")
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            throw Failure(
                description: "no esp32-sim at \(candidate.path); build it first "
                    + "(swift build --product esp32-sim) or set ESP32_SIM_BINARY"
            )
        }
        return candidate
    }

    /// The test's environment without a stray MQTT password, plus `extra`.
    private static func environment(adding extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["ESP32_SIM_MQTT_PASSWORD"] = nil
        return environment.merging(extra) { $1 }
    }

    /// Reads stdout until the line `ready`, EOF or the deadline, waiting in poll(2) only.
    private static func readUntilReady(_ fd: Int32, timeout: Duration) -> (String, Bool) {
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().contains("ready") {
                return (text, true)
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return (text, false) }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(
                &pfd,
                1,
                Int32(max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            )
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return (text, false) }
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return (text, false) }  // EOF: the process is gone
            bytes += chunk[..<count]
        }
    }

    private static func kill(_ process: Process, exited: DispatchSemaphore) {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = exited.wait(timeout: .now() + .seconds(5))
    }
}

private func dispatchDeadline(after timeout: Duration) -> DispatchTime {
    let (seconds, attoseconds) = timeout.components
    return .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
}

/// A UDP port that was free a moment ago. Racy by nature (someone else may take it before
/// it is used); prefer port 0 and `Simulator.udpPort`. Useful for "nobody listens here".
public func freeUDPPort(host: String = "127.0.0.1") throws -> UInt16 {
    // The wildcard of the family: free there means free on every address.
    try LoopbackSocket.freePort(.udp, host: host.contains(":") ? "::" : "0.0.0.0")
}

/// True when a datagram to 127.0.0.1:`port` draws ICMP port unreachable (a connected UDP
/// socket reports it as ECONNREFUSED), i.e. nothing listens there.
public func udpPortRefuses(_ port: UInt16) throws -> Bool {
    let socket = try LoopbackSocket(.udp)
    try socket.connect(to: LoopbackSocket.Address(host: "127.0.0.1", port: port))
    try? socket.send([0x01])
    _ = socket.waitUntilReadable(within: .seconds(2))
    do {
        _ = try socket.receive()
        return false
    } catch let failure as LoopbackSocket.Failure {
        return failure.code == ECONNREFUSED
    }
}
