import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in nanoseconds: the clock of the daemon's start and of the
/// button edges' kernel timestamps (the daemon reads both with clock_gettime too).
public func monotonicNowNs() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes; true when it held.
/// The only way these tests wait: for an observable condition, with a deadline.
@discardableResult
public func waitUntil(_ timeout: Duration = .seconds(15), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
}

/// A running `gate daemon` for one test: its own scratch folder (stderr log, the button
/// FIFO), spawned with an empty signal mask (Spawn.swift) so SIGTERM/SIGHUP reach it as
/// they would under systemd, and SIGKILLed in `deinit` (a watchdog shell does it too if the
/// test process dies first). Lock, status and history live where `environment` says
/// (`GateRunner.isolatedEnvironment()` gives each test its own).
///
///     let daemon = try DaemonProcess(config: config.path, environment: environment)
///     try daemon.waitForReady()
///     daemon.waitForSettling()
///     try daemon.press()
public final class DaemonProcess {
    /// How a child process ended; the simulator's type, shared.
    public typealias Termination = Simulator.Termination

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public enum EdgeKind: UInt32 {
        case rising = 1
        case falling = 2
    }

    public let directory: URL
    /// The FIFO given to `--button-events` (made with mkfifo), or nil when not used.
    let fifoPath: String?
    let stderrPath: String
    public let environment: [String: String]
    public let arguments: [String]
    /// CLOCK_MONOTONIC just before the spawn: the daemon's own start instant is later.
    public let spawnedNs: UInt64
    /// CLOCK_MONOTONIC when this test first saw "daemon ready": the daemon's start instant
    /// (taken first thing in `Daemon.run`) is earlier.
    private(set) var readySeenNs: UInt64?
    /// The latest timestamp written to the FIFO.
    private(set) var lastEdgeNs: UInt64?

    private let process = Process()
    private let exited = DispatchSemaphore(value: 0)
    private var termination: Termination?
    private var guardian: Process?

    /// Starts `gate daemon --config CONFIG [--button-events FIFO] EXTRA`. With `buttonFIFO`
    /// a fresh FIFO is made for the button; `environment` is taken as is, minus any systemd
    /// variables the test process itself may have inherited (`notify` adds them back).
    public init(
        config: String,
        environment: [String: String],
        buttonFIFO: Bool = true,
        extraArguments: [String] = [],
        notify: [String: String] = [:]
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gate-daemon-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stderrPath = directory.appendingPathComponent("stderr.log").path
        let stdoutPath = directory.appendingPathComponent("stdout.log").path
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        var arguments = ["daemon", "--config", config]
        if buttonFIFO {
            let fifo = directory.appendingPathComponent("button-events").path
            guard mkfifo(fifo, 0o600) == 0 else { throw Failure("mkfifo \(fifo): errno \(errno)") }
            fifoPath = fifo
            arguments += ["--button-events", fifo]
        } else {
            fifoPath = nil
        }
        arguments += extraArguments
        self.arguments = arguments
        var environment = environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "JOURNAL_STREAM"] {
            environment[key] = nil
        }
        environment.merge(notify) { $1 }
        self.environment = environment

        process.executableURL = try GateRunner.binary()
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        spawnedNs = monotonicNowNs()
        try runWithSignalsUnblocked(process)
        closeFileStreams(of: process)
        startGuardian()
    }

    deinit {
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 5)
        }
        if let guardian, guardian.isRunning { Glibc.kill(guardian.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: directory)
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { termination == nil && process.isRunning }

    /// Everything the daemon logged so far.
    public var log: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The log lines that contain every one of `needles`.
    public func logLines(containing needles: String...) -> [String] {
        log.split(separator: "\n").map(String.init).filter { line in needles.allSatisfy { line.contains($0) } }
    }

    /// Waits until at least `count` log lines contain every one of `needles`.
    @discardableResult
    public func waitForLog(_ needles: String..., count: Int = 1, timeout: Duration = .seconds(15)) -> Bool {
        waitUntil(timeout) {
            log.split(separator: "\n").filter { line in needles.allSatisfy { line.contains($0) } }.count >= count
        }
    }

    /// Waits for "daemon ready" (logged once the services run); throws with the log if the
    /// daemon exits or stays silent.
    public func waitForReady(timeout: Duration = .seconds(20)) throws {
        let seen = waitUntil(timeout) { log.contains("gate: info: daemon ready") || !process.isRunning }
        guard seen, log.contains("gate: info: daemon ready") else {
            throw Failure("gate daemon not ready within \(timeout) (running: \(process.isRunning)):\n\(log)")
        }
        readySeenNs = monotonicNowNs()
    }

    /// Waits out the 500 ms of boot settling (plus a margin), counted from the moment the
    /// ready line was seen: the daemon started before that. Not an assertion: presses
    /// stamped earlier would be ignored by design (test 4 checks that).
    public func waitForSettling() {
        guard let ready = readySeenNs else { return }
        let until = ready + 600_000_000
        let now = monotonicNowNs()
        if now < until { Thread.sleep(forTimeInterval: Double(until - now) / 1e9) }
    }

    // MARK: - The button

    /// One `struct gpioevent_data` (16 bytes, little-endian): u64 timestamp in ns on
    /// CLOCK_MONOTONIC, u32 id (1 rising, 2 falling), 4 bytes of padding.
    public static func record(_ kind: EdgeKind, at ns: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        withUnsafeBytes(of: ns.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: kind.rawValue.littleEndian) { bytes += $0 }
        bytes += [0, 0, 0, 0]
        return bytes
    }

    /// Writes the edges as one write(2) (atomic for up to 256 records: PIPE_BUF is 4096).
    /// The FIFO is opened for this write only; the daemon keeps it open read-write.
    public func writeEdges(_ edges: [(EdgeKind, UInt64)]) throws {
        try writeButtonBytes(edges.flatMap { Self.record($0.0, at: $0.1) })
        lastEdgeNs = max(lastEdgeNs ?? 0, edges.map(\.1).max() ?? 0)
    }

    /// Writes `bytes` into the button FIFO as they are, whole records or not (a broken writer).
    public func writeButtonBytes(_ bytes: [UInt8]) throws {
        guard let fifoPath else { throw Failure("this daemon has no button FIFO") }
        let fd = open(fifoPath, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("open \(fifoPath) for writing: errno \(errno) (is the daemon reading it?)") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            throw Failure("wrote \(written) of \(bytes.count) bytes to \(fifoPath): errno \(errno)")
        }
    }

    /// A press as a finger makes it (active low): falling edge now, rising `holdMs` later,
    /// each stamped when it is written. Returns the falling edge's timestamp, which the
    /// daemon logs as `edge_ns` when the press starts an opening.
    ///
    /// A press comes at least 150 ms after the last edge written, as from a finger: one
    /// inside the debounce lockout of the last release would be taken at the lockout's end
    /// instead (and logged with that instant).
    @discardableResult
    public func press(holdMs: Int = 150) throws -> UInt64 {
        let earliest = lastEdgeNs.map { $0 + 150_000_000 } ?? 0
        let now = monotonicNowNs()
        if now < earliest { Thread.sleep(forTimeInterval: Double(earliest - now) / 1e9) }
        let pressed = monotonicNowNs()
        try writeEdges([(.falling, pressed)])
        Thread.sleep(forTimeInterval: Double(holdMs) / 1000)
        try writeEdges([(.rising, monotonicNowNs())])
        return pressed
    }

    /// Waits until the press stamped `edgeNs` started an opening and every opening the
    /// button started so far has logged its outcome; false at the deadline.
    @discardableResult
    public func waitForPressHandled(edgeNs: UInt64, timeout: Duration = .seconds(20)) -> Bool {
        waitUntil(timeout) {
            let lines = log.split(separator: "\n")
            guard lines.contains(where: { $0.contains("button pressed; opening") && $0.contains("edge_ns=\(edgeNs)") })
            else { return false }
            let started = lines.filter { $0.contains("button pressed; opening") }.count
            let finished = lines.filter {
                $0.contains("source=button") && $0.contains(" outcome=") && $0.contains("duration_ms=")
            }.count
            return finished >= started
        }
    }

    // MARK: - Signals and exit

    public func send(_ signal: Int32) {
        if isRunning { Glibc.kill(process.processIdentifier, signal) }
    }

    /// Waits (bounded) for the daemon to exit by itself; nil if it still runs.
    public func waitForExit(timeout: Duration = .seconds(20)) -> Termination? {
        if let termination { return termination }
        let (seconds, attoseconds) = timeout.components
        let deadline =
            DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        guard exited.wait(timeout: deadline) == .success else { return nil }
        let result: Termination =
            process.terminationReason == .exit
            ? .exited(process.terminationStatus) : .signalled(process.terminationStatus)
        termination = result
        return result
    }

    /// SIGTERM and a bounded wait; SIGKILL if it does not stop (nil returned then).
    @discardableResult
    public func stop(timeout: Duration = .seconds(20)) -> Termination? {
        send(SIGTERM)
        if let result = waitForExit(timeout: timeout) { return result }
        Glibc.kill(process.processIdentifier, SIGKILL)
        _ = waitForExit(timeout: .seconds(5))
        return nil
    }

    // MARK: - Runtime files

    var runtimeDirectory: String { environment["GATE_RUNTIME_DIR"] ?? "" }

    /// status.json, parsed; nil while it is missing.
    public func status() -> [String: Any]? {
        DaemonFiles.status(runtimeDirectory: runtimeDirectory)
    }

    /// `gate history --json` in the daemon's environment: every entry, oldest first.
    public func history() throws -> [[String: Any]] {
        try DaemonFiles.history(environment: environment)
    }

    /// Kills the daemon when the test process dies (see `startOrphanGuard`).
    private func startGuardian() {
        guardian = try? startOrphanGuard(killing: process.processIdentifier, label: "gate-daemon-test-watchdog")
    }
}
