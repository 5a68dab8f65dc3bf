import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `esp32-sim --protocol 2` against PROTOCOL-V2.md and docs/CONTRACT.md#the-relay-simulator:
/// the real simulator process over UDP on loopback and a real mosquitto, with frames built
/// and replies checked by the one C core (`V2TestKey`) with the keys of the vectors file.
@Suite(.serialized)
struct SimulatorV2Tests {
    static let trigger = "iot/house/gate/esp32/trigger"
    static let status = "iot/house/gate/esp32/status"
    static let replies = status + "/v2"

    let vectors: V2Vectors
    /// Material A as key 1, material B as key 2.
    let keyA: V2TestKey
    let keyB: V2TestKey

    init() throws {
        vectors = try V2Vectors()
        keyA = try vectors.key("A", id: 1)
        keyB = try vectors.key("B", id: 2)
    }

    // MARK: - UDP

    @Test func anOpenCyclesOnceAndItsCopiesAreOnlyAcknowledged() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("v2-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("pi.key").path
        try (keyA.hex + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
        // The key from a file this time; the other tests use $ESP32_SIM_KEY<ID>.
        let sim = try Simulator(["--protocol", "2", "--hold-ms", "200", "--key-file", "1=\(keyFile)"])
        #expect(!sim.arguments.joined().contains(keyA.hex))
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)

        let frame = keyA.open(epoch: epoch, counter: 1)
        #expect(try exchange(probe, frame, keyA, counter: 1, count: 2) == cycle(epoch), "\(sim.stderrText)")
        let activations = try sim.activations()
        #expect(activations.count == 1)
        let endpoint = try probe.localEndpoint()
        #expect(activations.first?.via == "udp" && activations.first?.from == endpoint)
        #expect(activations.first?.protocolVersion == 2 && activations.first?.keyID == 1)
        #expect(activations.first?.counter == 1)

        // The same 32 bytes again (a replay, or a client's retry): acknowledged, no cycle.
        #expect(try exchange(probe, frame, keyA, counter: 1, count: 2) == cycle(epoch))
        let other = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        #expect(try exchange(other, frame, keyA, counter: 1, count: 2) == cycle(epoch))
        #expect(try sim.activations().count == 1, "\(sim.stderrText)")
        #expect(try sim.stop() == .exited(0))
    }

    @Test func lowerCountersForgedTagsAndMalformedFramesGetSilence() throws {
        let sim = try simulator([keyA])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)
        #expect(try exchange(probe, keyA.open(epoch: epoch, counter: 5), keyA, counter: 5, count: 2) == cycle(epoch))

        var forged = keyA.open(epoch: epoch, counter: 6)
        forged[31] ^= 0x01
        let otherKeysFrame = keyB.open(epoch: epoch, counter: 6)  // key 2 is not provisioned
        let asReply = keyA.frame(type: 0x10, epoch: epoch, counter: 6, signedAsReply: true)
        for datagram in [
            keyA.open(epoch: epoch, counter: 3), forged, otherKeysFrame, asReply, Array(forged.prefix(31)),
        ] {
            try probe.send(datagram)
        }
        #expect(try probe.receiveAll(within: .milliseconds(600)).isEmpty)
        #expect(try sim.activations().count == 1)

        // Not a dead device: the next genuine counter cycles.
        #expect(try exchange(probe, keyA.open(epoch: epoch, counter: 6), keyA, counter: 6, count: 2) == cycle(epoch))
        #expect(try sim.activations().map(\.counter) == [5, 6])
    }

    @Test func aStaleEpochGets9EWithTheCurrentOneAndMovesNothing() throws {
        let sim = try simulator([keyA])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)
        let stale = epoch &+ 1
        let answer = try exchange(probe, keyA.open(epoch: stale, counter: 1), keyA, counter: 1, count: 1)
        #expect(answer == [.init(type: V2TestKey.staleEpoch, epoch: epoch)])
        #expect(try probe.receiveAll(within: .milliseconds(300)).isEmpty)
        #expect(try sim.activations().isEmpty)
        // last[] did not move: the same counter with the right epoch opens.
        #expect(try exchange(probe, keyA.open(epoch: epoch, counter: 1), keyA, counter: 1, count: 2) == cycle(epoch))
    }

    @Test func aV1TriggerFiresNothingOnceAKeyIsProvisioned() throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker, topic: Self.status + "/#")
        let sim = try simulator([keyA], broker: broker)
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send([0x01])
        try broker.publish(topic: Self.trigger, payload: String(Int(Date().timeIntervalSince1970)))
        #expect(try probe.receiveAll(within: .milliseconds(600)).isEmpty)
        #expect(recorder.messages(topic: Self.status).isEmpty)
        #expect(try sim.activations().isEmpty)
        #expect(try statusReply(probe, keyA)?.type == V2TestKey.status)
    }

    @Test func withAcceptV1AV1TriggerStillFiresAndStatusSays94() throws {
        let sim = try simulator([keyA], ["--accept-v1"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        #expect(try statusReply(probe, keyA)?.type == V2TestKey.statusV1Accepted)
        try probe.send([0x01])
        #expect(try probe.receive(count: 2, within: .seconds(5)).map(\.bytes) == [[0x01], [0x00]])
        let activations = try sim.activations()
        #expect(activations.map(\.protocolVersion) == [1] && activations.first?.counter == nil)
    }

    @Test func withoutAKeyTheDeviceSpeaksV1AndV2FramesFireNothing() throws {
        let sim = try simulator([])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        try probe.send(keyA.statusQuery())
        try probe.send(keyA.open(epoch: 1, counter: 1))
        #expect(try probe.receiveAll(within: .milliseconds(600)).isEmpty)
        try probe.send([0x01])
        #expect(try probe.receive(count: 2, within: .seconds(5)).map(\.bytes) == [[0x01], [0x00]])
        #expect(try sim.activations().map(\.protocolVersion) == [1])
    }

    @Test func busyAnswers93AndTheRelayNeverMoves() throws {
        let sim = try simulator([keyA, keyB], ["--fault", "busy"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)
        let frame = keyA.open(epoch: epoch, counter: 1)
        let busy = V2TestKey.Reply(type: V2TestKey.busy, epoch: epoch)
        #expect(try exchange(probe, frame, keyA, counter: 1, count: 1) == [busy], "\(sim.stderrText)")
        // Its copy gets the counter's answer again; another key is busy too.
        #expect(try exchange(probe, frame, keyA, counter: 1, count: 1) == [busy])
        #expect(try exchange(probe, keyB.open(epoch: epoch, counter: 9), keyB, counter: 9, count: 1) == [busy])
        #expect(try probe.receiveAll(within: .milliseconds(500)).isEmpty)
        #expect(try sim.activations().isEmpty)
    }

    @Test func rebootBySIGUSR1DrawsANewEpochAndForgetsTheCounters() throws {
        let sim = try simulator([keyA])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let before = try learnEpoch(probe, keyA)
        #expect(try exchange(probe, keyA.open(epoch: before, counter: 1), keyA, counter: 1, count: 2) == cycle(before))

        sim.send(signal: SIGUSR1)
        try #require(waitFor(within: .seconds(5)) { sim.stderrText.contains("rebooted (SIGUSR1)") })
        let after = try learnEpoch(probe, keyA)
        #expect(after != before)
        // The frame of before the reboot is dead; counter 1 is new again for the rebooted device.
        let stale = try exchange(probe, keyA.open(epoch: before, counter: 1), keyA, counter: 1, count: 1)
        #expect(stale == [.init(type: V2TestKey.staleEpoch, epoch: after)])
        #expect(try exchange(probe, keyA.open(epoch: after, counter: 1), keyA, counter: 1, count: 2) == cycle(after))
        #expect(try sim.activations().map(\.counter) == [1, 1])
        #expect(try sim.stop() == .exited(0))
    }

    @Test func silentCyclesTheRelayButReportsNothingAboutIt() throws {
        let sim = try simulator([keyA], ["--fault", "silent"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)  // status replies are not reports: still answered
        try probe.send(keyA.open(epoch: epoch, counter: 1))
        #expect(try probe.receiveAll(within: .milliseconds(800)).isEmpty)
        #expect(try sim.activations().map(\.counter) == [1])
    }

    @Test func garbageSendsA90WhoseTagFails() throws {
        let sim = try simulator([keyA], ["--fault", "garbage"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)
        try probe.send(keyA.open(epoch: epoch, counter: 1))
        let received = try probe.receive(count: 2, within: .seconds(2))
        #expect(received.count == 1 && received.first?.bytes.count == 32 && received.first?.bytes[1] == 0x90)
        #expect(received.allSatisfy { keyA.check(reply: $0.bytes, counter: 1) == nil })
        #expect(try sim.activations().count == 1)
    }

    @Test(arguments: [
        ("duplicate", [V2TestKey.relayOn, V2TestKey.relayOn, V2TestKey.relayOff, V2TestKey.relayOff]),
        ("no-release", [V2TestKey.relayOn]),
        ("udp:silent", []),
    ])
    func faultsShapeTheSignedReplies(fault: String, types: [UInt8]) throws {
        let sim = try simulator([keyA], ["--fault", fault])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)
        try probe.send(keyA.open(epoch: epoch, counter: 1))
        let replies = try probe.receive(count: 5, within: .milliseconds(1500)).map {
            keyA.check(reply: $0.bytes, counter: 1)
        }
        #expect(replies.map { $0?.type } == types, "\(sim.stderrText)")
        #expect(replies.allSatisfy { $0?.epoch == epoch })
        #expect(try sim.activations().count == 1)
    }

    @Test func aLossFractionLosesSomeRepliesAndNotOthers() throws {
        let sim = try simulator([keyA], ["--fault", "udp:lost-replies", "--loss-fraction", "0.5"])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        for counter in UInt64(1)...40 { try probe.send(keyA.statusQuery(counter: counter)) }
        let received = try probe.receive(count: 40, within: .seconds(2))
        // Both outcomes 40 times in a row would come once in 2^39 runs.
        #expect((1...39).contains(received.count), "\(received.count) of 40 status replies came")
    }

    // MARK: - MQTT

    @Test func theSameFrameOverMQTTIsAcknowledgedThereWithoutASecondCycle() throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker, topic: Self.status + "/#")
        let sim = try simulator([keyA], broker: broker)
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)
        let frame = keyA.open(epoch: epoch, counter: 7)
        #expect(try exchange(probe, frame, keyA, counter: 7, count: 2) == cycle(epoch))
        #expect(recorder.waitForMessages(topic: Self.status, count: 2) == ["1", "0"])

        try broker.publish(topic: Self.trigger + "/v2", payload: hexString(frame), qos: 0)
        let seen = recorder.waitForMessages(topic: Self.replies, count: 2)
        #expect(seen.count == 2, "\(sim.stderrText)")
        let replies = recorder.received(topic: Self.replies).map { keyA.check(hexReply: $0.payload, counter: 7) }
        #expect(replies == cycle(epoch))
        #expect(recorder.received(topic: Self.replies).allSatisfy { !$0.retained })
        #expect(recorder.messages(topic: Self.status) == ["1", "0"], "no second cycle's 1/0")
        #expect(try sim.activations().map(\.counter) == [7])
    }

    @Test func anOpenOverMQTTCyclesAndAnswersOnTheRepliesTopic() throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker, topic: Self.status + "/#")
        let sim = try simulator([keyA], broker: broker)
        try broker.publish(topic: Self.trigger + "/v2", payload: hexString(keyA.statusQuery(counter: 3)), qos: 0)
        recorder.waitForMessages(topic: Self.replies, count: 1)
        let status = recorder.received(topic: Self.replies).first.flatMap {
            keyA.check(hexReply: $0.payload, counter: 3)
        }
        let epoch = try #require(status?.epoch)
        #expect(status?.type == V2TestKey.status)

        try broker.publish(topic: Self.trigger + "/v2", payload: hexString(keyA.open(epoch: epoch, counter: 4)), qos: 0)
        recorder.waitForMessages(topic: Self.replies, count: 3)
        let replies = recorder.received(topic: Self.replies).dropFirst().map {
            keyA.check(hexReply: $0.payload, counter: 4)
        }
        #expect(replies == cycle(epoch), "\(sim.stderrText)")
        let activation = try sim.activations().first
        #expect(activation?.via == "mqtt" && activation?.counter == 4 && activation?.payload?.count == 64)
    }

    @Test func theRetainedEpochAnnouncementIsOnTheBrokerPerKey() throws {
        let broker = try MosquittoBroker(.plain)
        let sim = try simulator([keyA, keyB], broker: broker)
        // A client arriving after "ready" gets them from the broker's retained store.
        let recorder = try MQTTRecorder(broker, topic: Self.replies + "/epoch/+")
        recorder.waitForMessages(topic: Self.replies + "/epoch/2", count: 1)
        let first = try #require(recorder.received(topic: Self.replies + "/epoch/1").first)
        let second = try #require(recorder.received(topic: Self.replies + "/epoch/2").first)
        #expect(first.retained && second.retained)
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let epoch = try learnEpoch(probe, keyA)
        #expect(keyA.check(hexReply: first.payload, counter: 0) == .init(type: V2TestKey.status, epoch: epoch))
        #expect(keyB.check(hexReply: second.payload, counter: 0) == .init(type: V2TestKey.status, epoch: epoch))
        #expect(keyA.check(hexReply: second.payload, counter: 0) == nil, "each signed with its own key")
    }

    @Test func theEpochRotatesEveryPeriodAndIsAnnouncedAgain() throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker, topic: Self.replies + "/epoch/1")
        let sim = try simulator([keyA], ["--epoch-period-ms", "1000"], broker: broker)
        let seen = recorder.waitForMessages(topic: Self.replies + "/epoch/1", count: 3, within: .seconds(10))
        let epochs = recorder.received(topic: Self.replies + "/epoch/1").compactMap {
            keyA.check(hexReply: $0.payload, counter: 0)?.epoch
        }
        #expect(seen.count >= 3 && epochs.count == seen.count, "\(sim.stderrText)")
        #expect(Set(epochs).count == epochs.count, "a new epoch each time: \(epochs)")
    }

    @Test func lostRepliesSilenceUDPWhileMQTTStillAnswers() throws {
        let broker = try MosquittoBroker(.plain)
        let recorder = try MQTTRecorder(broker, topic: Self.status + "/#")
        let sim = try simulator([keyA], ["--fault", "udp:lost-replies"], broker: broker)
        // The epoch from the retained announcement: UDP's status replies are lost too.
        recorder.waitForMessages(topic: Self.replies + "/epoch/1", count: 1)
        let announcement = try #require(recorder.received(topic: Self.replies + "/epoch/1").first)
        let epoch = try #require(keyA.check(hexReply: announcement.payload, counter: 0)?.epoch)

        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let frame = keyA.open(epoch: epoch, counter: 1)
        try probe.send(frame)
        #expect(recorder.waitForMessages(topic: Self.status, count: 2) == ["1", "0"])
        #expect(try probe.receiveAll(within: .milliseconds(300)).isEmpty)

        try broker.publish(topic: Self.trigger + "/v2", payload: hexString(frame), qos: 0)
        recorder.waitForMessages(topic: Self.replies, count: 2)
        let replies = recorder.received(topic: Self.replies).map { keyA.check(hexReply: $0.payload, counter: 1) }
        #expect(replies == cycle(epoch), "\(sim.stderrText)")
        #expect(try sim.activations().map(\.via) == ["udp"])
    }

    // MARK: - The vectors file

    @Test func theCoreBuildsTheVectorsFramesAndTheSimulatorAnswersThem() throws {
        for vector in vectors.frames {
            let material = try #require(vectors.materials[vector.material])
            let key = try #require(V2TestKey(id: vector.keyID, hex: material.key))
            #expect(key.directionKeysHex == (material.c2d, material.d2c))
            let built = key.frame(
                type: vector.type,
                epoch: vector.epoch,
                counter: vector.counter,
                gate: vector.gate,
                version: vector.version,
                signedAsReply: vector.signedAsReply
            )
            #expect(hexString(built) == vector.hex, "frame \(vector.name)")
        }

        // Material A provisioned as key 1: the vectors' own bytes, sent as they are.
        let sim = try simulator([keyA])
        let probe = try UDPProbe(host: sim.udpHost, port: sim.udpPort)
        let query = try vectors.frame(named: "status-query")
        try probe.send(try #require(bytesFromHex(query.hex)))
        let status = try probe.receive(count: 1, within: .seconds(5)).first
        let epoch = try #require(status.flatMap { keyA.check(reply: $0.bytes, counter: 0) }?.epoch)
        let open = try vectors.frame(named: "open")
        try probe.send(try #require(bytesFromHex(open.hex)))
        let answer = try probe.receive(count: 1, within: .seconds(5)).first.flatMap {
            keyA.check(reply: $0.bytes, counter: 1)
        }
        // Its epoch 0badcafe is stale unless the device drew that very one.
        let expected = epoch == open.epoch ? V2TestKey.relayOn : V2TestKey.staleEpoch
        #expect(answer == .init(type: expected, epoch: epoch))
    }

    // MARK: - Usage

    @Test(arguments: [
        ["--key-file", "1=/nonexistent"], ["--accept-v1"], ["--fault", "busy"], ["--fault", "udp:lost-replies"],
        ["--epoch-period-ms", "1000"],
    ])
    func protocolTwoOptionsNeedProtocolTwo(options: [String]) throws {
        let result = try Simulator.run(["--udp", "127.0.0.1:0"] + options)
        #expect(result.termination == .exited(64))
        #expect(result.stderr.contains("needs --protocol 2"), "\(result.stderr)")
    }

    @Test func aMalformedKeyStopsTheDeviceWithoutShowingIt() throws {
        let bad = String(keyA.hex.dropLast()) + "g"
        let result = try Simulator.run(
            ["--udp", "127.0.0.1:0", "--protocol", "2"],
            environment: ["ESP32_SIM_KEY3": bad]
        )
        #expect(result.termination == .exited(1))
        #expect(result.stderr.contains("key 3 ($ESP32_SIM_KEY3) is not 64 hex digits"), "\(result.stderr)")
        #expect(!result.stderr.contains(bad) && result.stdout.isEmpty)
    }

    @Test func helpDescribesProtocolTwoAndItsFaults() throws {
        let result = try Simulator.run(["--help"])
        #expect(result.termination == .exited(0))
        for text in [
            "--protocol", "--key-file", "ESP32_SIM_KEY", "--accept-v1", "--epoch-period-ms", "lost-replies", "busy",
            "SIGUSR1",
        ] {
            #expect(result.stdout.contains(text), "\(text)")
        }
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
        return try Simulator(arguments, environment: environment)
    }

    private func cycle(_ epoch: UInt32) -> [V2TestKey.Reply?] {
        [.init(type: V2TestKey.relayOn, epoch: epoch), .init(type: V2TestKey.relayOff, epoch: epoch)]
    }

    /// Sends `frame`; each datagram that comes back within 5 s (up to `count`) as the
    /// genuine reply it is for (`key`, `counter`), or nil when it is none.
    private func exchange(
        _ probe: UDPProbe,
        _ frame: [UInt8],
        _ key: V2TestKey,
        counter: UInt64,
        count: Int
    ) throws -> [V2TestKey.Reply?] {
        try probe.send(frame)
        return try probe.receive(count: count, within: .seconds(5)).map { key.check(reply: $0.bytes, counter: counter) }
    }

    private func statusReply(_ probe: UDPProbe, _ key: V2TestKey) throws -> V2TestKey.Reply? {
        try exchange(probe, key.statusQuery(counter: 100), key, counter: 100, count: 1).first ?? nil
    }

    private func learnEpoch(_ probe: UDPProbe, _ key: V2TestKey) throws -> UInt32 {
        let reply = try #require(try statusReply(probe, key))
        try #require(reply.type == V2TestKey.status)
        return reply.epoch
    }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes.
private func waitFor(within timeout: Duration, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
}
