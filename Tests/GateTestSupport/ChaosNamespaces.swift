import Foundation

#if canImport(Glibc)
import Glibc
#endif

// Network namespaces for the chaos tests (issue 7): each test makes its own, with names
// unique to the test process, private addresses (10.203.x.y) that exist only inside them,
// and veth pairs created directly inside the namespaces (never in the machine's own one).
// Deleting a namespace destroys the veths in it, and with each its peer.

public enum NetNS {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public static let ipTool =
        ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/ip"
    static let tcTool =
        ["/usr/sbin/tc", "/sbin/tc"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/tc"
    /// Every namespace of these tests starts with this, then the pid of the test process.
    public static let prefix = "gatechaos-"

    /// Runs `ip ARGUMENTS`; throws with ip's own words unless it exits 0.
    @discardableResult
    public static func ip(_ arguments: [String]) throws -> String {
        let run = try MosquittoBroker.runTool(ipTool, arguments, timeout: .seconds(10))
        guard run.status == 0 else {
            throw Failure(
                "ip \(arguments.joined(separator: " ")): exit \(run.status): \(run.stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
            )
        }
        return run.stdout
    }

    /// The names of the namespaces that exist now.
    public static func list() -> [String] {
        let text = (try? ip(["netns", "list"])) ?? ""
        return text.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// Why network namespaces cannot be made here, or nil when they can: probed once, by
    /// making a namespace with a veth pair and deleting it.
    public static let unavailableReason: String? = {
        guard geteuid() == 0 else {
            return "network namespaces need root (ip netns add), and the tests do not run as root"
        }
        guard FileManager.default.isExecutableFile(atPath: ipTool) else { return "no ip(8) (iproute2) on this machine" }
        sweepStale()
        let probe = "\(prefix)\(getpid())-probe"
        defer { _ = try? ip(["netns", "del", probe]) }
        do {
            try ip(["netns", "add", probe])
            try ip(["link", "add", "p0", "netns", probe, "type", "veth", "peer", "name", "p1", "netns", probe])
            try ip(["-n", probe, "link", "set", "lo", "up"])
        } catch {
            return "network namespaces cannot be made here: \(error)"
        }
        return nil
    }()

    static var available: Bool { unavailableReason == nil }

    /// Deletes namespaces of these tests left behind by a test process that died (SIGKILL,
    /// crash) before its `defer` ran: those whose pid no longer runs.
    static func sweepStale() {
        for name in list() where name.hasPrefix(prefix) {
            guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0.isNumber }), pid != getpid() else {
                continue
            }
            if kill(pid, 0) != 0 && errno == ESRCH {
                _ = try? ip(["netns", "del", name])
            }
        }
    }

    /// Whether the kernel has `tc qdisc netem`. On the machine these tests were written on it
    /// has not ("Specified qdisc kind is unknown": no sch_netem module, and no module can be
    /// loaded), which is why the link is impaired by `ChaosRelay` in user space.
    public static func netemProbe(namespace: String, device: String) -> String {
        guard FileManager.default.isExecutableFile(atPath: tcTool) else { return "unavailable: no tc(8)" }
        guard
            let run = try? MosquittoBroker.runTool(
                tcTool,
                ["-n", namespace, "qdisc", "add", "dev", device, "root", "netem", "delay", "200ms"]
            )
        else {
            return "unavailable: tc did not run"
        }
        if run.status == 0 {
            _ = try? MosquittoBroker.runTool(tcTool, ["-n", namespace, "qdisc", "del", "dev", device, "root"])
            return "available (not used: the user-space relay also counts every datagram)"
        }
        return "unavailable: \(run.stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
    }

    private typealias SetNSFunction = @convention(c) (Int32, Int32) -> Int32
    private static let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET, which Swift's Glibc does not export

    /// Moves the calling thread (only it: the network namespace is per thread) into `namespace`.
    /// Sockets made afterwards on this thread belong to that namespace for their whole life,
    /// whichever thread uses them later. `setns` is looked up with dlsym: Swift's Glibc module
    /// does not declare it.
    static func enterOnThisThread(_ namespace: String) throws {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else {
            throw Failure("no setns in libc")
        }
        let setns = unsafeBitCast(symbol, to: SetNSFunction.self)
        let fd = open("/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("open /run/netns/\(namespace): errno \(errno)") }
        defer { close(fd) }
        guard setns(fd, cloneNewNet) == 0 else { throw Failure("setns \(namespace): errno \(errno)") }
    }
}

/// The namespaces of one test. `tearDown()` (also run by `deinit`) deletes them all; call it
/// from a `defer` after stopping the processes that run inside.
public final class NamespaceSet {
    /// Part of every name: the test process's pid and a random tag.
    let tag: String
    private(set) var names: [String] = []

    public init() {
        tag = "\(getpid())-\(UUID().uuidString.prefix(6).lowercased())"
    }

    deinit { tearDown() }

    /// A fresh namespace `gatechaos-PID-TAG-ROLE`, with its loopback up.
    public func add(_ role: String) throws -> String {
        let name = "\(NetNS.prefix)\(tag)-\(role)"
        try NetNS.ip(["netns", "add", name])
        names.append(name)
        try NetNS.ip(["-n", name, "link", "set", "lo", "up"])
        return name
    }

    /// A veth pair from `a` to `b` (the same namespace twice is allowed), each end with an
    /// optional address (CIDR) and up.
    public func connect(
        _ a: String,
        _ aDevice: String,
        _ aAddress: String?,
        to b: String,
        _ bDevice: String,
        _ bAddress: String?
    ) throws {
        try NetNS.ip(["link", "add", aDevice, "netns", a, "type", "veth", "peer", "name", bDevice, "netns", b])
        for (namespace, device, address) in [(a, aDevice, aAddress), (b, bDevice, bAddress)] {
            if let address { try NetNS.ip(["-n", namespace, "addr", "add", address, "dev", device]) }
            try NetNS.ip(["-n", namespace, "link", "set", device, "up"])
        }
    }

    /// A hub: a bridge `bridge` in `namespace` that forgets every MAC address at once
    /// (ageing time 0), so that it floods every frame to every port, as a shared Wi-Fi
    /// medium shows every station's frames to a listener.
    public func hub(in namespace: String, bridge: String = "br0") throws {
        try NetNS.ip(["-n", namespace, "link", "add", bridge, "type", "bridge", "ageing_time", "0"])
        try NetNS.ip(["-n", namespace, "link", "set", bridge, "up"])
    }

    /// A veth pair from `member` (device `device`, `address`, up) to a port `port` of the
    /// hub's bridge in `hubNamespace`.
    public func join(
        _ member: String,
        _ device: String,
        _ address: String,
        toHubIn hubNamespace: String,
        port: String,
        bridge: String = "br0"
    ) throws {
        try connect(member, device, address, to: hubNamespace, port, nil)
        try NetNS.ip(["-n", hubNamespace, "link", "set", port, "master", bridge])
    }

    /// Deletes every namespace of this set (and so their veths); errors are ignored, as
    /// this runs in `defer` and `deinit`.
    public func tearDown() {
        for name in names.reversed() {
            _ = try? NetNS.ip(["netns", "del", name])
        }
        names = []
    }

    /// Namespaces of this set that still exist (empty after `tearDown`).
    public func leftovers() -> [String] {
        NetNS.list().filter { $0.contains(tag) }
    }
}

/// A long-running program inside a namespace (`ip netns exec NS PROGRAM …`, which execs, so
/// the pid is the program's), with its output in files and the test-process watchdog of
/// `MosquittoBroker.Child`: it is SIGKILLed if the test process dies first.
public final class NamespacedProcess {
    public let namespace: String
    public let directory: URL
    let stdoutPath: String
    let stderrPath: String
    private let child: MosquittoBroker.Child

    public init(namespace: String, executable: String, arguments: [String]) throws {
        self.namespace = namespace
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-chaos-proc-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        stdoutPath = directory.appendingPathComponent("stdout").path
        stderrPath = directory.appendingPathComponent("stderr").path
        child = try MosquittoBroker.Child(
            NetNS.ipTool,
            ["netns", "exec", namespace, executable] + arguments,
            stdout: URL(fileURLWithPath: stdoutPath),
            stderr: URL(fileURLWithPath: stderrPath),
            watchdog: true
        )
    }

    deinit {
        child.terminate(grace: .seconds(2))
        try? FileManager.default.removeItem(at: directory)
    }

    public var pid: Int32 { child.pid }
    public var isRunning: Bool { child.isRunning }
    public var stdoutText: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var stderrText: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Polls until `condition` holds; throws (with the output) if the process exits or the time runs out.
    public func wait(for what: String, timeout: Duration = .seconds(15), _ condition: () -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard child.isRunning else {
                throw NetNS.Failure(
                    "\(what): the process in \(namespace) exited\n--- stdout\n\(stdoutText)--- stderr\n\(stderrText)"
                )
            }
            guard ContinuousClock.now < deadline else {
                throw NetNS.Failure(
                    "\(what): not within \(timeout)\n--- stdout\n\(stdoutText)--- stderr\n\(stderrText)"
                )
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// SIGTERM, then SIGKILL after `grace`.
    public func stop(grace: Duration = .seconds(3)) {
        child.terminate(grace: grace)
    }
}

/// `esp32-sim` inside a namespace, started with a trigger log; ready once it printed `ready`.
public final class NamespacedSimulator {
    public let process: NamespacedProcess
    public let triggerLogPath: String

    public init(namespace: String, udp: String, _ extraArguments: [String] = []) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-chaos-sim-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        triggerLogPath = directory.appendingPathComponent("triggers.jsonl").path
        process = try NamespacedProcess(
            namespace: namespace,
            executable: try Simulator.binary().path,
            arguments: ["--udp", udp, "--trigger-log", triggerLogPath] + extraArguments
        )
        let process = self.process
        try process.wait(for: "esp32-sim ready") {
            process.stdoutText.split(separator: "\n").contains("ready")
        }
    }

    /// The trigger log's lines: one per relay activation.
    public func activations() -> [String] {
        ((try? String(contentsOfFile: triggerLogPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    public func stop() { process.stop() }
}

/// mosquitto inside a namespace, on that namespace's own 127.0.0.1 (a fixed port is safe:
/// nothing else lives there).
public final class NamespacedBroker {
    public let process: NamespacedProcess
    public let port: UInt16
    let logFile: String

    public init(namespace: String, port: UInt16 = 1883) throws {
        self.port = port
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-chaos-broker-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        logFile = directory.appendingPathComponent("mosquitto.log").path
        let config = directory.appendingPathComponent("mosquitto.conf").path
        try """
        listener \(port) 127.0.0.1
        user root
        persistence false
        allow_anonymous true
        log_dest file \(logFile)
        log_type all
        connection_messages true

        """.write(toFile: config, atomically: true, encoding: .utf8)
        process = try NamespacedProcess(
            namespace: namespace,
            executable: MosquittoBroker.mosquitto,
            arguments: ["-c", config]
        )
        let logFile = self.logFile
        try process.wait(for: "mosquitto running") {
            ((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "").contains(" running")
        }
    }

    public var logText: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    public func stop() { process.stop() }
}

/// `gate` run once inside a namespace, like `GateRunner.run`.
public enum ChaosGate {
    public static func run(
        in namespace: String,
        _ arguments: [String],
        environment: [String: String],
        timeout: Duration = .seconds(20)
    ) throws -> GateRun {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-chaos-run-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("stdout")
        let err = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: NetNS.ipTool)
        process.arguments = ["netns", "exec", namespace, try GateRunner.binary().path] + arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        let started = ContinuousClock.now
        try process.run()
        closeFileStreams(of: process)
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        if exited.wait(timeout: .now() + seconds) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 5)
            throw NetNS.Failure("gate \(arguments) in \(namespace) did not finish within \(timeout)")
        }
        let wall = ContinuousClock.now - started
        return GateRun(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "",
            wall: wall
        )
    }
}
