import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Openings under `[esp32] protocol = 2` (docs/CONTRACT.md#protocol-v2-openings): the real
/// `gate` binary against a real `esp32-sim --protocol 2` on loopback and a real mosquitto,
/// activations counted from the simulator's trigger log, frames and replies checked with
/// the one C core (`V2TestKey`) and the keys of the vectors file.
@Suite("Protocol v2 openings", .serialized)
struct V2OpeningTests {
    static let trigger = "iot/house/gate/esp32/trigger"
    static let status = "iot/house/gate/esp32/status"
    static let requests = trigger + "/v2"
    static let replies = status + "/v2"

    let keyA: V2TestKey
    let keyB: V2TestKey

    init() throws {
        let vectors = try V2Vectors()
        keyA = try vectors.key("A", id: 1)
        keyB = try vectors.key("B", id: 2)
    }

    @Test("One v2 opening over UDP: one cycle, exit 0; the next one uses a higher counter")
    func udpOpening() throws {
        let sim = try simulator([keyA])
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort)
        let first = try gate.open()
        #expect(first.status == 0, "\(first.summary)\n\(sim.stderrText)")
        #expect(try first.json()["adapter"] as? String == "udp")
        let second = try gate.open()
        #expect(second.status == 0, "\(second.summary)")
        let activations = try sim.activations()
        #expect(activations.map(\.via) == ["udp", "udp"], "\(activations)")
        #expect(activations.allSatisfy { $0.protocolVersion == 2 && $0.keyID == 1 })
        // Each process reserves a block of its own: 1, then 65.
        let counters = activations.compactMap(\.counter)
        #expect(counters == [1, 65], "\(counters)")
        #expect(try String(contentsOfFile: gate.stateDirectory + "/esp32-counter-1", encoding: .utf8) == "128\n")
    }

    @Test("No key: 78, nothing sent, the words say where gate looked")
    func noKey() throws {
        let sim = try simulator([keyA])
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort)
        try FileManager.default.removeItem(atPath: gate.environment["CREDENTIALS_DIRECTORY"]! + "/esp32-key")
        let run = try gate.open()
        #expect(run.status == 78, "\(run.summary)")
        #expect((try run.json()["message"] as? String)?.contains("nothing was sent") == true, "\(run.stdout)")
        #expect(!sim.stderrText.contains("udp from"), "\(sim.stderrText)")
        #expect(try sim.activations().isEmpty)
    }

    @Test(
        "UDP replies lost: the same frame over MQTT, one cycle, success through the signed MQTT replies",
        arguments: [false, true]
    )
    func udpRepliesLost(tls: Bool) throws {
        // With `tls`, the broker speaks TLS only, with a CA made for the test.
        let broker = try MosquittoBroker(tls ? .tls : .plain)
        let sim = try simulator([keyA], ["--fault", "udp:lost-replies"], broker: broker)
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker)
        let run = try gate.open()
        #expect(run.status == 0, "\(run.summary)\n\(sim.stderrText)")
        let json = try run.json()
        #expect(json["adapter"] as? String == "mqtt", "\(run.stdout)")
        let attempts = json["attempts"] as? [[String: Any]] ?? []
        #expect(attempts.map { $0["adapter"] as? String } == ["udp", "mqtt"], "\(attempts)")
        #expect(attempts.map { $0["trigger_sent"] as? Bool } == [true, true])
        #expect(try sim.activations().map(\.via) == ["udp"], "\(sim.stderrText)")
    }

    @Test("The same frame over UDP then MQTT: identical bytes, one cycle, two acknowledgements")
    func sameFrameTwice() throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker, topic: "iot/house/gate/esp32/#")
        let sim = try simulator([keyA], ["--fault", "udp:lost-replies"], broker: broker)
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker)
        let run = try gate.open()
        #expect(run.status == 0, "\(run.summary)\n\(sim.stderrText)")
        let activation = try #require(try sim.activations().first)
        let counter = try #require(activation.counter)
        #expect(try sim.activations().count == 1)
        // Acknowledgement 1: the UDP copy's, lost on the way back.
        #expect(sim.stderrText.contains("udp:lost-replies: 0x90 counter \(counter)"), "\(sim.stderrText)")
        // Acknowledgement 2: the MQTT copy's, repeated without a cycle.
        let replies = recorder.waitForMessages(topic: Self.replies, count: 2)
        let checked = recorder.received(topic: Self.replies).compactMap {
            keyA.check(hexReply: $0.payload, counter: counter)
        }
        #expect(checked.map(\.type) == [V2TestKey.relayOn, V2TestKey.relayOff], "\(replies)")
        let epoch = try #require(checked.first?.epoch)
        let copies = recorder.received(topic: Self.requests)
        #expect(copies.map(\.text) == [hexString(keyA.open(epoch: epoch, counter: counter))], "\(copies)")
        #expect(copies.allSatisfy { !$0.retained })
        #expect(recorder.messages(topic: Self.status) == ["1", "0"], "one cycle's plain 1 and 0")
    }

    @Test("The opening's own MQTT link still connecting when UDP's silence ends: the copy waits for it")
    func slowLinkStillCarriesTheCopy() throws {
        let broker = try MosquittoBroker(.plain)
        // Status replies still come over UDP (the epoch); the open's replies do not.
        let sim = try simulator([keyA], ["--fault", "udp:silent"], broker: broker)
        // Every chunk between gate and the broker 600 ms late: the link is up only after
        // about four of them, well after the 1 s UDP attempt.
        let proxy = try ChaosSlowProxy(to: broker.port, delay: .milliseconds(600))
        defer { proxy.stop() }
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker, mqttPort: proxy.port, mqttTimeout: 8.0)
        let run = try gate.open()
        #expect(run.status == 0, "\(run.summary)\n\(sim.stderrText)")
        #expect(try run.json()["adapter"] as? String == "mqtt", "\(run.stdout)")
        #expect(try sim.activations().map(\.via) == ["udp"])
    }

    @Test("Forged replies and a forged plain 1/0: never a success")
    func forgedRepliesNeverSucceed() throws {
        let broker = try MosquittoBroker(.plain)
        // The relay cycles and the device says nothing: only forgeries answer.
        let sim = try simulator([keyA], ["--fault", "silent"], broker: broker)
        let epoch = try announcedEpoch(broker)
        let forger = try Forger(broker: broker, payloads: forgeries(epoch: epoch, counters: [1]))
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker)
        let run = try gate.open()
        forger.stop()
        #expect(forger.published > 0)
        #expect(run.status == 124, "\(run.summary)\n\(sim.stderrText)")
        #expect(try run.json()["outcome"] as? String == "timeout")
        #expect(try sim.activations().count == 1, "the MQTT copy was only acknowledged (silently)")
    }

    @Test("Forged plain 1s, forged 0x93 and 0x9E: never a lock-out, the fallback still goes")
    func forgeriesLockNobodyOut() throws {
        let broker = try MosquittoBroker(.plain)
        // UDP's replies lost: each opening needs its MQTT copy, while forged 1s keep coming.
        let sim = try simulator([keyA], ["--fault", "udp:lost-replies"], broker: broker)
        let epoch = try announcedEpoch(broker)
        let forger = try Forger(
            broker: broker,
            payloads: forgeries(epoch: epoch, counters: [1, 65, 129], plainRelease: false)
        )
        defer { forger.stop() }
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker)
        for _ in 0..<3 {
            let run = try gate.open()
            #expect(run.status == 0, "\(run.summary)\n\(sim.stderrText)")
            #expect(try run.json()["adapter"] as? String == "mqtt")
        }
        #expect(forger.published > 0)
        #expect(try sim.activations().count == 3)
    }

    @Test("The ESP32 restarts between the epoch's announcement and the opening: one retry, one activation")
    func rebootRetriesOnce() throws {
        let broker = try MosquittoBroker(.plain)
        // A device off the broker: the announcement of before its restart stays retained.
        let sim = try simulator([keyA])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send(keyA.statusQuery(counter: 77))
        let status = try probe.receive(count: 1, within: .seconds(5)).first.flatMap {
            keyA.check(reply: $0.bytes, counter: 77)
        }
        let before = try #require(status?.epoch)
        let announcement = keyA.frame(type: V2TestKey.status, epoch: before, counter: 0, signedAsReply: true)
        try broker.publish(topic: Self.replies + "/epoch/1", payload: hexString(announcement), retained: true)
        sim.send(signal: SIGUSR1)
        #expect(waitUntil(.seconds(5)) { sim.stderrText.contains("rebooted (SIGUSR1)") })

        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker)
        let run = try gate.open()
        #expect(run.status == 0, "\(run.summary)\n\(sim.stderrText)")
        let attempts = try run.json()["attempts"] as? [[String: Any]] ?? []
        #expect(attempts.map { $0["adapter"] as? String } == ["udp", "udp"], "\(attempts)")
        #expect((attempts.first?["reason"] as? String)?.contains("0x9E") == true, "\(attempts)")
        let activations = try sim.activations()
        #expect(activations.count == 1, "\(activations)")
        #expect(sim.stderrText.contains("open v2 key 1 gate 0 epoch \(hex32(before))"), "\(sim.stderrText)")
    }

    @Test("A v1 device gets v2 frames: nothing fires, a clear exit")
    func v1DeviceFiresNothing() throws {
        let sim = try Simulator([])
        // No epoch to learn: the signed status query gets nothing back (69, nothing moved).
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort)
        let run = try gate.open()
        #expect(run.status == 69, "\(run.summary)")
        let message = try run.json()["message"] as? String ?? ""
        #expect(message.contains("cannot learn the ESP32's epoch"), "\(message)")
        // An epoch from an announcement: the open frame itself reaches the v1 device.
        let broker = try MosquittoBroker(.plain)
        let announcement = keyA.frame(type: V2TestKey.status, epoch: 0x1234_5678, counter: 0, signedAsReply: true)
        try broker.publish(topic: Self.replies + "/epoch/1", payload: hexString(announcement), retained: true)
        let announced = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker)
        let framed = try announced.open(["--via", "udp"])
        #expect(framed.status == 124, "\(framed.summary)")
        #expect(try framed.json()["message"] as? String ?? "" != "", "\(framed.stdout)")
        #expect(try sim.activations().isEmpty, "\(sim.stderrText)")
    }

    @Test("Two clients with different keys open at once: each its own counters, never two cycles at once")
    func twoKeysAtOnce() throws {
        let sim = try simulator([keyA, keyB], hold: 600)
        let pi = try V2Gate(key: keyA, udpPort: sim.udpPort)
        let laptop = try V2Gate(key: keyB, udpPort: sim.udpPort)
        var runs: [GateRun] = []
        for _ in 0..<3 {
            let one = try pi.start()
            let other = try laptop.start()
            runs += [try one.finish(timeout: .seconds(30)), try other.finish(timeout: .seconds(30))]
        }
        let exits = runs.map(\.status)
        #expect(exits.allSatisfy { $0 == 0 || $0 == 75 }, "\(exits)\n\(sim.stderrText)")
        // Started together against a 600 ms hold, the later frame finds the relay held: the
        // ESP32's signed busy (0x93), which gate reports as another opening in progress.
        let busy = runs.filter { $0.status == 75 }
        #expect(!busy.isEmpty, "no opening met the other's cycle: \(exits)")
        for run in busy {
            #expect(try run.json()["error"] as? String == "operationInProgress", "\(run.summary)")
        }
        let activations = try sim.activations()
        #expect(activations.count == exits.filter { $0 == 0 }.count, "\(activations)\n\(exits)")
        for key in [UInt8(1), 2] {
            let counters = activations.filter { $0.keyID == key }.compactMap(\.counter)
            #expect(counters == counters.sorted() && Set(counters).count == counters.count, "\(counters)")
        }
    }

    @Test("A captured frame replayed on UDP: never a second cycle")
    func replayDropped() throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker, topic: Self.requests)
        let sim = try simulator([keyA], ["--fault", "udp:lost-replies"], broker: broker)
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker)
        #expect(try gate.open().status == 0)
        // The frame's MQTT copy, the same 32 bytes gate sent on UDP first.
        let captured = try #require(recorder.received(topic: Self.requests).first.flatMap { bytesFromHex($0.text) })
        let attacker = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try attacker.send(captured)
        _ = try attacker.receiveAll(within: .milliseconds(500))
        #expect(try sim.activations().count == 1, "replayed at once: only acknowledged")
        // After the next opening the captured counter is old: dropped without a word.
        #expect(try gate.open().status == 0, "\(sim.stderrText)")
        try attacker.send(captured)
        #expect(try attacker.receiveAll(within: .milliseconds(500)).isEmpty)
        #expect(try sim.activations().count == 2, "\(sim.stderrText)")
    }

    @Test(
        "The daemon opens with v2 through its warm link (delegated, button, Home Assistant); a forged plain 1 locks nobody out"
    )
    func daemonOpening() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try simulator([keyA], broker: broker)
        let gate = try V2Gate(key: keyA, udpPort: sim.udpPort, broker: broker, extra: "[homeassistant]\n")
        let daemon = try DaemonProcess(config: gate.config.path, environment: gate.environment)
        try daemon.waitForReady()
        #expect(daemon.waitForLog("gate: info: MQTT link up"), "\(daemon.log)")
        daemon.waitForSettling()
        try broker.publish(topic: Self.status, payload: "1")
        let delegated = try GateRunner.run(
            ["open", "--json", "--config", gate.config.path],
            environment: gate.environment
        )
        #expect(delegated.status == 0, "\(delegated.summary)\n\(daemon.log)")
        #expect(try sim.activations().map(\.via) == ["udp"], "\(sim.stderrText)")
        // The button goes through the same pipeline.
        let edge = try daemon.press()
        #expect(daemon.waitForPressHandled(edgeNs: edge), "\(daemon.log)")
        let last = DaemonFiles.last(daemon.status())
        #expect(last?["outcome"] as? String == "success" && last?["source"] as? String == "button", "\(daemon.log)")
        // A Home Assistant press too: its source in the history, one more signed cycle.
        #expect(daemon.waitForLog("Home Assistant device announced"), "\(daemon.log)")
        try broker.publish(topic: "gate/garden_gate/open", payload: "PRESS", qos: 0)
        let pressed = waitUntil {
            ((try? daemon.history()) ?? []).contains { $0["source"] as? String == "homeassistant" }
        }
        #expect(pressed, "\(daemon.log)")
        let fromHA = try daemon.history().last { $0["source"] as? String == "homeassistant" }
        #expect(fromHA?["outcome"] as? String == "success", "\(String(describing: fromHA))\n\(daemon.log)")
        let activations = try sim.activations()
        #expect(activations.count == 3 && activations.allSatisfy { $0.protocolVersion == 2 }, "\(activations)")
        // The epoch came with the warm link: no status query went to the device.
        #expect(!sim.stderrText.contains("status query"), "\(sim.stderrText)")
        #expect(daemon.stop() == .exited(0), "\(daemon.log)")
    }

    // MARK: - Helpers

    private func simulator(
        _ keys: [V2TestKey],
        _ extra: [String] = [],
        broker: MosquittoBroker? = nil,
        hold: Int = 200
    ) throws -> Simulator {
        var environment: [String: String] = [:]
        for key in keys { environment["ESP32_SIM_KEY\(key.id)"] = key.hex }
        var arguments = ["--protocol", "2", "--hold-ms", String(hold)] + extra
        if let broker { arguments += ["--mqtt-host", broker.host, "--mqtt-port", String(broker.port)] }
        if let caFile = broker?.caFile { arguments += ["--mqtt-tls-ca", caFile] }
        return try Simulator(arguments, environment: environment)
    }

    /// The epoch the simulator announced (retained) for key 1.
    private func announcedEpoch(_ broker: MosquittoBroker) throws -> UInt32 {
        let recorder = try MQTTRecorder(broker, topic: Self.replies + "/epoch/1")
        recorder.waitForMessages(topic: Self.replies + "/epoch/1", count: 1)
        let announcement = try #require(recorder.received(topic: Self.replies + "/epoch/1").first)
        return try #require(keyA.check(hexReply: announcement.payload, counter: 0)?.epoch)
    }

    /// What a client without key 1 can publish: replies for these counters signed with
    /// another key, with a broken tag, signed as requests; plain `1` (and `0`).
    private func forgeries(
        epoch: UInt32,
        counters: [UInt64],
        plainRelease: Bool = true
    ) -> [(topic: String, payload: String)] {
        var payloads: [(topic: String, payload: String)] = []
        for counter in counters {
            for type in [V2TestKey.relayOn, V2TestKey.relayOff, V2TestKey.busy, V2TestKey.staleEpoch] {
                var broken = keyA.frame(type: type, epoch: epoch, counter: counter, signedAsReply: true)
                broken[31] ^= 0x01
                let otherKey = keyB.frame(type: type, epoch: epoch, counter: counter, keyID: 1, signedAsReply: true)
                let asRequest = keyA.frame(type: type, epoch: epoch, counter: counter, signedAsReply: false)
                payloads += [broken, otherKey, asRequest].map { (Self.replies, hexString($0)) }
            }
            payloads.append((Self.status, "1"))
            if plainRelease { payloads.append((Self.status, "0")) }
        }
        return payloads
    }
}

/// A `gate` with `[udp]` (and `[mqtt]`), `[esp32] protocol = 2` and the key as the systemd
/// credential `esp32-key`, in folders of its own.
struct V2Gate {
    let config: TestConfig
    let environment: [String: String]

    /// `mqttPort`: where gate connects to the broker, when not straight to it (a proxy).
    init(
        key: V2TestKey,
        udpPort: UInt16,
        broker: MosquittoBroker? = nil,
        mqttPort: UInt16? = nil,
        mqttTimeout: Double = 2.0,
        extra: String = ""
    ) throws {
        let mqtt =
            broker.map {
                "[mqtt]\nhost = \"\($0.host)\"\nport = \(mqttPort ?? $0.port)\ntimeout = \(mqttTimeout)\n"
                    + ($0.caFile.map { "tls = true\nca_file = \"\($0)\"\n" } ?? "")
            } ?? ""
        config = try TestConfig(
            """
            [udp]
            host = "127.0.0.1"
            port = \(udpPort)
            timeout = 1.0
            \(mqtt)
            [runtime]
            cooldown = 0
            reset_delay = 0.1
            [esp32]
            protocol = 2
            key_id = \(key.id)
            \(extra)
            """
        )
        let credentials = config.directory.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try (key.hex + "\n").write(
            to: credentials.appendingPathComponent("esp32-key"),
            atomically: true,
            encoding: .utf8
        )
        var environment = GateRunner.isolatedEnvironment()
        environment["CREDENTIALS_DIRECTORY"] = credentials.path
        self.environment = environment
    }

    var stateDirectory: String { environment["GATE_STATE_DIR"] ?? "" }

    func open(_ extra: [String] = []) throws -> GateRun {
        try GateRunner.run(["open", "--json", "--direct", "--config", config.path] + extra, environment: environment)
    }

    func start() throws -> RunningGate {
        try GateRunner.start(["open", "--json", "--direct", "--config", config.path], environment: environment)
    }
}

/// Publishes forged messages until stopped: one `mosquitto_pub -l` per topic (a line read,
/// a message published), fed every few milliseconds from a thread of its own.
final class Forger: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    private var count = 0
    private let done = DispatchSemaphore(value: 0)
    private var publishers: [(process: Process, input: Pipe)] = []

    init(broker: MosquittoBroker, payloads: [(topic: String, payload: String)]) throws {
        var byTopic: [String: [String]] = [:]
        for (topic, payload) in payloads { byTopic[topic, default: []].append(payload) }
        for topic in byTopic.keys.sorted() {
            let process = Process()
            let input = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
            process.arguments =
                broker.clientArguments(credentials: .brokerDefault, trust: .brokerCA) + ["-q", "0", "-t", topic, "-l"]
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            publishers.append((process, input))
        }
        let feeds = byTopic.keys.sorted().enumerated().map { (publishers[$0.offset].input, byTopic[$0.element] ?? []) }
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            var round = 0
            while !lock.withLock({ stopped }) {
                for (input, lines) in feeds {
                    input.fileHandleForWriting.write(Data((lines[round % lines.count] + "\n").utf8))
                }
                lock.withLock { count += 1 }
                round += 1
                Thread.sleep(forTimeInterval: 0.003)
            }
        }
    }

    var published: Int { lock.withLock { count } }

    func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        done.wait()
        for publisher in publishers {
            try? publisher.input.fileHandleForWriting.close()
            publisher.process.waitUntilExit()
        }
    }

    deinit { stop() }
}

private func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
