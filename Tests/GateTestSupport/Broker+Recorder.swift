import Foundation

/// A real `mosquitto_sub` in the background that records every message it sees on a
/// `MosquittoBroker` (topic, payload bytes, retained flag). Subscribed when `init` returns.
///
/// Output format `-F '%r %x %t'`: mosquitto_sub 2.0.11 supports `%r` (retained flag, 0/1);
/// the payload is printed as hex (`%x`) so payloads with spaces or newlines parse exactly, and
/// the topic comes last so topics with spaces do too. `-v` is not passed: `-F` replaces it.
///
/// mosquitto_sub speaks MQTT 3.1.1 here: the retained flag is 1 only for messages the broker
/// delivers from its retained store when the subscription is made; a retained publish that
/// arrives while subscribed is forwarded with the flag 0.
///
/// Across a broker `kill()`/`restart()`: mosquitto_sub 2.0.11 keeps reconnecting by itself on a
/// plain port but exits on a TLS one ("Unable to connect (A TLS error occurred.)"), so the
/// recorder starts it again (every 0.5 s while it is down) until `stop()`. Either way it
/// subscribes again once the broker is back (`waitUntilSubscribed()` tells when); messages
/// published while it was away are lost. The restarted broker holds no retained messages
/// (`persistence false`).
public final class MQTTRecorder: @unchecked Sendable {
    public struct Message: Equatable, Sendable, CustomStringConvertible {
        public var topic: String
        public var payload: [UInt8]
        public var retained: Bool
        public var text: String { String(decoding: payload, as: UTF8.self) }
        public var description: String { "\(retained ? "[retained] " : "")\(topic) \(text)" }

        public init(topic: String, payload: [UInt8], retained: Bool) {
            self.topic = topic
            self.payload = payload
            self.retained = retained
        }
    }

    /// Topics under this prefix are the recorders' readiness markers: never reported.
    public static let markerPrefix = "gate-test-recorder/"

    public let filter: String
    private let directory: URL
    private let outputFile: URL
    private let errorFile: URL
    private let arguments: [String]
    private let marker: String
    private let markerPublish: [String]
    private let lock = NSLock()
    private var child: MosquittoBroker.Child
    private var stopped = false
    private var lastSpawn = ContinuousClock.now
    private var respawnCount = 0

    /// Starts `mosquitto_sub -t filter` and returns once it has provably subscribed: a marker
    /// published (again and again, with the broker's default credentials) came back to it.
    /// Throws if mosquitto_sub cannot connect (wrong CA, wrong password…).
    public init(
        _ broker: MosquittoBroker,
        topic filter: String = "#",
        credentials: MosquittoBroker.Credentials = .brokerDefault,
        trust: MosquittoBroker.Trust = .brokerCA,
        readyWithin timeout: Duration = .seconds(10)
    ) throws {
        self.filter = filter
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-recorder-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        outputFile = directory.appendingPathComponent("stdout")
        errorFile = directory.appendingPathComponent("stderr")
        let marker = "\(Self.markerPrefix)ready/\(UUID().uuidString)"
        let arguments =
            broker.clientArguments(credentials: credentials, trust: trust)
            + ["-q", "1", "-t", filter, "-t", marker, "-F", "%r %x %t"]
        self.arguments = arguments
        do {
            child = try MosquittoBroker.Child(
                MosquittoBroker.mosquittoSub,
                arguments,
                stdout: outputFile,
                stderr: errorFile,
                watchdog: true
            )
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }

        markerPublish =
            broker.clientArguments(credentials: .brokerDefault, trust: .brokerCA) + ["-q", "0", "-t", marker]
        self.marker = marker
        do {
            try handshake(within: timeout, strict: true)
        } catch {
            child.terminate(grace: .zero)
            throw MosquittoBroker.Failure("\(error)\n--- broker log\n\(broker.logText)")
        }
        startSupervisor()
    }

    /// Waits (bounded) until mosquitto_sub is subscribed again, e.g. after the broker's
    /// `restart()`: publishes a fresh marker until it comes back.
    public func waitUntilSubscribed(within timeout: Duration = .seconds(10)) throws {
        try handshake(within: timeout, strict: false)
    }

    /// `strict` (at start): fail at once if mosquitto_sub exits or the marker cannot be published.
    private func handshake(within timeout: Duration, strict: Bool) throws {
        let nonce = UUID().uuidString
        let deadline = ContinuousClock.now + timeout
        var problem = "no marker came back"
        while ContinuousClock.now < deadline {
            let current = lock.withLock { child }
            if strict, !current.isRunning {
                throw MosquittoBroker.Failure(
                    "mosquitto_sub exited with status \(current.process.terminationStatus):\n\(errorText)"
                )
            }
            let published = try MosquittoBroker.runTool(MosquittoBroker.mosquittoPub, markerPublish + ["-m", nonce])
            if published.status != 0 {
                problem = "cannot publish the recorder's marker: \(published.summary)"
                if strict { throw MosquittoBroker.Failure(problem) }
            }
            let retry = ContinuousClock.now + .milliseconds(250)
            while ContinuousClock.now < retry {
                if allRecords().contains(where: { $0.topic == marker && $0.text == nonce }) { return }
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        throw MosquittoBroker.Failure("mosquitto_sub was not subscribed within \(timeout) (\(problem)):\n\(errorText)")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops mosquitto_sub for good (SIGTERM, then SIGKILL). What it recorded stays readable.
    public func stop() {
        let current = lock.withLock {
            stopped = true
            return child
        }
        current.terminate(grace: .seconds(2))
    }

    public var isRunning: Bool { lock.withLock { child.isRunning } }

    /// How often mosquitto_sub had exited (broker gone) and was started again.
    var respawns: Int { lock.withLock { respawnCount } }

    /// Restarts mosquitto_sub whenever it has exited, until `stop()` or `deinit`.
    private func startSupervisor() {
        Thread { [weak self] in
            while true {
                Thread.sleep(forTimeInterval: 0.1)
                guard let self, self.superviseOnce() else { return }
            }
        }.start()
    }

    /// False once stopped.
    private func superviseOnce() -> Bool {
        lock.withLock {
            if stopped { return false }
            if child.isRunning || ContinuousClock.now - lastSpawn < .milliseconds(500) { return true }
            lastSpawn = .now
            if let next = try? MosquittoBroker.Child(
                MosquittoBroker.mosquittoSub,
                arguments,
                stdout: outputFile,
                stderr: errorFile,
                watchdog: true
            ) {
                child = next
                respawnCount += 1
            }
            return true
        }
    }

    /// What mosquitto_sub printed on stderr (connection errors…).
    public var errorText: String { (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "" }

    /// Every message seen so far, in arrival order, markers excluded.
    public var received: [Message] { allRecords().filter { !$0.topic.hasPrefix(Self.markerPrefix) } }

    /// Messages seen on exactly `topic`.
    public func received(topic: String) -> [Message] { received.filter { $0.topic == topic } }

    /// Payloads (as UTF-8 text) seen on exactly `topic`.
    public func messages(topic: String) -> [String] { received(topic: topic).map(\.text) }

    /// Waits (bounded) until at least `count` messages arrived on `topic`; returns the payloads
    /// seen by then, fewer than `count` on timeout.
    @discardableResult
    public func waitForMessages(topic: String, count: Int = 1, within timeout: Duration = .seconds(5)) -> [String] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let seen = messages(topic: topic)
            if seen.count >= count || ContinuousClock.now >= deadline { return seen }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    private func allRecords() -> [Message] {
        guard let data = try? Data(contentsOf: outputFile) else { return [] }
        let text = String(decoding: data, as: UTF8.self)
        // Only complete lines: the last one may still be being written.
        guard let end = text.lastIndex(of: "\n") else { return [] }
        return text[..<end].split(separator: "\n", omittingEmptySubsequences: false).compactMap(Self.parse)
    }

    /// One `%r %x %t` line: "1 68656c6c6f gate/state" (an empty payload gives two spaces).
    private static func parse(_ line: Substring) -> Message? {
        let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0] == "0" || fields[0] == "1", fields[1].count % 2 == 0 else { return nil }
        var payload: [UInt8] = []
        var index = fields[1].startIndex
        while index < fields[1].endIndex {
            let next = fields[1].index(index, offsetBy: 2)
            guard let byte = UInt8(fields[1][index..<next], radix: 16) else { return nil }
            payload.append(byte)
            index = next
        }
        return Message(topic: String(fields[2]), payload: payload, retained: fields[0] == "1")
    }
}
