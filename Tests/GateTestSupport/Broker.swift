import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real mosquitto (the Debian `/usr/sbin/mosquitto`, 2.0.11 here) for one test, on its own
/// free 127.0.0.1 port with its own temporary folder (config, log, certificates, password
/// file), so that suites running at the same time never share a broker.
///
/// Stopped in `deinit`; a watchdog also SIGKILLs it if the test process dies without running
/// `deinit`. `persistence false`: retained messages do not survive `kill()`/`restart()`.
///
///     let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": "secret"]))
///     let recorder = try MQTTRecorder(broker)
///     try broker.publish(topic: "gate/cmd", payload: "open")
///     #expect(recorder.waitForMessages(topic: "gate/cmd", count: 1) == ["open"])
public final class MosquittoBroker: @unchecked Sendable {
    public enum Security: Sendable {
        case plain
        case tls
        case password(users: [String: String])
        case tlsAndPassword(users: [String: String])

        var usesTLS: Bool {
            switch self {
            case .tls, .tlsAndPassword: true
            case .plain, .password: false
            }
        }

        public var users: [String: String]? {
            switch self {
            case .password(let users), .tlsAndPassword(let users): users
            case .plain, .tls: nil
            }
        }
    }

    /// Who a mosquitto_pub/mosquitto_sub run by the fixture connects as.
    public enum Credentials: Sendable {
        /// `defaultCredentials` when the broker has users, else anonymous.
        case brokerDefault
        case anonymous
        case user(String, password: String)
    }

    /// Which CA a client run by the fixture trusts.
    public enum Trust: Sendable {
        /// `caFile` when the broker uses TLS, else plaintext.
        case brokerCA
        case caFile(String)
        /// No TLS at all, even if the broker wants it (mosquitto_pub then exits 7).
        case plaintext
    }

    public static let mosquitto = "/usr/sbin/mosquitto"
    static let mosquittoPub = "/usr/bin/mosquitto_pub"
    public static let mosquittoSub = "/usr/bin/mosquitto_sub"
    static let mosquittoPasswd = "/usr/bin/mosquitto_passwd"

    public let host = "127.0.0.1"
    public let security: Security
    /// The broker's own temporary folder (removed in `deinit`).
    public let directory: URL
    let configFile: String
    let logFile: String
    /// CA, server certificate and key; nil for `.plain` and `.password`.
    public let tls: TLSFiles?
    /// The first configured user by name, used by `publish` and `MQTTRecorder` unless told otherwise.
    public let defaultCredentials: (username: String, password: String)?

    private let outputFile: String
    private let aclFile: String?
    private let lock = NSLock()
    private var currentPort: UInt16 = 0
    private var child: Child?

    /// PEM path of the CA that signed the server certificate; nil without TLS.
    public var caFile: String? { tls?.caCertificate }
    public var port: UInt16 { lock.withLock { currentPort } }
    /// The pid of the mosquitto started last (running or not).
    public var pid: Int32 { lock.withLock { child?.pid ?? 0 } }
    public var isRunning: Bool { lock.withLock { child?.isRunning ?? false } }

    /// mosquitto's log file (`log_type all`) followed by whatever it printed on stdout/stderr.
    public var logText: String {
        let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        let output = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        return output.isEmpty ? log : log + "\n--- mosquitto stdout/stderr\n" + output
    }

    /// - Parameter aclFile: a mosquitto `acl_file` to apply (deploy/mosquitto/gate.acl in the ACL tests).
    public init(_ security: Security = .plain, aclFile: String? = nil) throws {
        self.security = security
        self.aclFile = aclFile
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-broker-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        configFile = directory.appendingPathComponent("mosquitto.conf").path
        logFile = directory.appendingPathComponent("mosquitto.log").path
        outputFile = directory.appendingPathComponent("mosquitto.out").path
        do {
            tls = security.usesTLS ? try Self.makeTLSFiles(in: directory.appendingPathComponent("tls")) : nil
            if let users = security.users {
                guard let first = users.keys.sorted().first else {
                    throw Failure("a password broker needs at least one user")
                }
                defaultCredentials = (first, users[first]!)
                try Self.writePasswordFile(directory.appendingPathComponent("passwd").path, users: users)
            } else {
                defaultCredentials = nil
            }
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }

        // The port is free when chosen but another process may bind it first: retry with a new one.
        var attempts: [String] = []
        for _ in 1...5 {
            let port = try Self.freeLoopbackPort()
            lock.withLock { currentPort = port }
            try writeConfig(port: port)
            switch try launch() {
            case .ready:
                return
            case .addressInUse(let text):
                attempts.append("port \(port): \(text)")
            case .failed(let text):
                throw Failure("mosquitto did not start: \(text)\n--- config\n\(config(port: port))")
            }
        }
        throw Failure("mosquitto found no free port after 5 attempts:\n" + attempts.joined(separator: "\n"))
    }

    deinit {
        lock.withLock { child }?.terminate(grace: .seconds(2))
        try? FileManager.default.removeItem(at: directory)
    }

    /// SIGTERM, then waits (SIGKILL after 5 s).
    public func stop() {
        lock.withLock { child }?.terminate(grace: .seconds(5))
    }

    /// SIGKILL and wait: the broker vanishes without closing anything cleanly.
    public func kill() {
        lock.withLock { child }?.terminate(grace: .zero)
    }

    /// Starts mosquitto again with the same config on the same port (stopping it first if it
    /// still runs). Retries for up to `timeout` while the port is still taken.
    public func restart(timeout: Duration = .seconds(10)) throws {
        stop()
        let deadline = ContinuousClock.now + timeout
        var last = ""
        repeat {
            switch try launch() {
            case .ready:
                return
            case .addressInUse(let text):
                last = text
                Thread.sleep(forTimeInterval: 0.2)
            case .failed(let text):
                throw Failure("mosquitto did not restart on port \(port): \(text)")
            }
        } while ContinuousClock.now < deadline
        throw Failure("port \(port) stayed in use for \(timeout) after the broker stopped:\n\(last)")
    }

    /// Publishes with `mosquitto_pub` (QoS 1 by default, so the broker has it when this returns);
    /// throws unless it exits 0.
    public func publish(
        topic: String,
        payload: String,
        retained: Bool = false,
        qos: Int = 1,
        credentials: Credentials = .brokerDefault,
        trust: Trust = .brokerCA
    ) throws {
        let run = try runPublish(
            topic: topic,
            payload: payload,
            retained: retained,
            qos: qos,
            credentials: credentials,
            trust: trust
        )
        guard run.status == 0 else { throw Failure("mosquitto_pub failed: \(run.summary)\n--- broker log\n\(logText)") }
    }

    /// Runs `mosquitto_pub` and returns how it ended, for tests that expect it to fail
    /// (NOTES.md: wrong password or anonymous 5, plaintext to a TLS port 7, wrong CA 8).
    public func runPublish(
        topic: String,
        payload: String,
        retained: Bool = false,
        qos: Int = 1,
        credentials: Credentials = .brokerDefault,
        trust: Trust = .brokerCA
    ) throws -> ToolRun {
        var arguments = clientArguments(credentials: credentials, trust: trust) + ["-q", String(qos), "-t", topic]
        arguments += payload.isEmpty ? ["-n"] : ["-m", payload]
        if retained { arguments.append("-r") }
        return try Self.runTool(Self.mosquittoPub, arguments)
    }

    /// `-h -p` plus TLS and credential options for mosquitto_pub/mosquitto_sub.
    public func clientArguments(credentials: Credentials, trust: Trust) -> [String] {
        var arguments = ["-h", host, "-p", String(port)]
        switch trust {
        case .brokerCA: if let caFile { arguments += ["--cafile", caFile] }
        case .caFile(let path): arguments += ["--cafile", path]
        case .plaintext: break
        }
        // Test credentials only: passing a password with -P puts it on the command line, where
        // any local user can read it. Acceptable in this fixture, never in gate itself.
        switch credentials {
        case .brokerDefault:
            if let user = defaultCredentials { arguments += ["-u", user.username, "-P", user.password] }
        case .anonymous: break
        case .user(let username, let password): arguments += ["-u", username, "-P", password]
        }
        return arguments
    }

    // MARK: - Starting

    private enum Launch {
        case ready
        case addressInUse(String)
        case failed(String)
    }

    /// Starts mosquitto on `port` and waits (at most 10 s) until its log says it runs and a TCP
    /// connect to the port succeeds.
    private func launch(timeout: Duration = .seconds(10)) throws -> Launch {
        let port = self.port
        let logStart = Self.size(of: logFile)
        let outputStart = Self.size(of: outputFile)
        let started = try Child(
            Self.mosquitto,
            ["-c", configFile],
            stdout: URL(fileURLWithPath: outputFile),
            stderr: URL(fileURLWithPath: outputFile),
            watchdog: true
        )
        lock.withLock { child = started }
        let news = { Self.text(of: self.logFile, from: logStart) + Self.text(of: self.outputFile, from: outputStart) }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if !started.isRunning {
                let text = news()
                if text.contains("Address already in use") { return .addressInUse(text) }
                return .failed("exited with status \(started.process.terminationStatus):\n\(text)")
            }
            if news().contains(" running"), Self.acceptsConnections(port: port), started.isRunning {
                return .ready
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        started.terminate(grace: .zero)
        return .failed("not listening on 127.0.0.1:\(port) within \(timeout):\n\(news())")
    }

    private func config(port: UInt16) -> String {
        var lines = [
            "listener \(port) 127.0.0.1",
            // Started as root, mosquitto would drop to user mosquitto and then fail to read the
            // root-owned 0600 key and password file (NOTES.md).
            "user root",
            "persistence false",
            "log_dest file \(logFile)",
            "log_type all",
            "connection_messages true",
        ]
        if security.users != nil {
            lines += ["allow_anonymous false", "password_file \(directory.appendingPathComponent("passwd").path)"]
        } else {
            lines.append("allow_anonymous true")
        }
        if let aclFile {
            lines.append("acl_file \(aclFile)")
        }
        if let tls {
            lines += [
                "cafile \(tls.caCertificate)",
                "certfile \(tls.serverCertificate)",
                "keyfile \(tls.serverKey)",
                "require_certificate false",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func writeConfig(port: UInt16) throws {
        try config(port: port).write(toFile: configFile, atomically: true, encoding: .utf8)
    }

    private static func writePasswordFile(_ path: String, users: [String: String]) throws {
        for (index, name) in users.keys.sorted().enumerated() {
            // -c creates (truncates) the file: only for the first user.
            let arguments = (index == 0 ? ["-c", "-b"] : ["-b"]) + [path, name, users[name]!]
            let run = try runTool(mosquittoPasswd, arguments)
            guard run.status == 0 else {
                throw Failure("mosquitto_passwd failed for user \(name): exit \(run.status)\n\(run.stderr)")
            }
        }
    }

    private static func size(of path: String) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
    }

    private static func text(of path: String, from offset: UInt64) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? handle.close() }
        handle.seek(toFileOffset: offset)
        return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
    }
}
