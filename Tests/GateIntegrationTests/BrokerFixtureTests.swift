import Foundation
import GateTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real-broker fixture (`MosquittoBroker`, `MQTTRecorder`) against the real mosquitto
/// 2.0.11 clients: if these fail, no MQTT integration test can be trusted.
@Suite(.serialized)
struct BrokerFixtureTests {
    /// A failed certificate check makes mosquitto_pub 2.0.11 exit 8 ("Error: A TLS error
    /// occurred.") when the handshake fails inside its network loop, or 1 ("Unable to connect (A
    /// TLS error occurred.)") when it already fails inside connect: which one is a race (about 1
    /// in 4 runs gave 8 here), so both count.
    private func expectTLSFailure(_ run: MosquittoBroker.ToolRun, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.status == 8 || run.status == 1, "\(run.summary)", sourceLocation: sourceLocation)
        #expect(run.stderr.contains("A TLS error occurred"), "\(run.summary)", sourceLocation: sourceLocation)
    }

    @Test func plainPublishIsRecordedExactly() throws {
        let broker = try MosquittoBroker()
        #expect(broker.host == "127.0.0.1")
        #expect(broker.port != 0)
        #expect(broker.caFile == nil)
        #expect(broker.defaultCredentials == nil)
        let recorder = try MQTTRecorder(broker)

        try broker.publish(topic: "gate/command", payload: "open")
        try broker.publish(topic: "gate/odd topic", payload: "two words\nand a second line")
        try broker.publish(topic: "gate/empty", payload: "")

        #expect(recorder.waitForMessages(topic: "gate/command") == ["open"], "\(broker.logText)")
        #expect(recorder.waitForMessages(topic: "gate/odd topic") == ["two words\nand a second line"])
        #expect(recorder.waitForMessages(topic: "gate/empty") == [""])
        #expect(
            recorder.received.map(\.topic) == ["gate/command", "gate/odd topic", "gate/empty"],
            "markers are hidden"
        )
        #expect(recorder.received.allSatisfy { !$0.retained })
        #expect(broker.logText.contains("mosquitto version 2.0.11 running"))
    }

    @Test func tlsAcceptsTheBrokersCAAndRefusesAnUnrelatedOne() throws {
        let broker = try MosquittoBroker(.tls)
        let caFile = try #require(broker.caFile)
        #expect(FileManager.default.fileExists(atPath: caFile))
        let recorder = try MQTTRecorder(broker)

        try broker.publish(topic: "gate/tls", payload: "right CA")
        #expect(recorder.waitForMessages(topic: "gate/tls") == ["right CA"])

        let unrelated = try MosquittoBroker.makeUnrelatedCA(in: broker.directory.appendingPathComponent("other"))
        #expect(unrelated != caFile)
        let wrongCA = try broker.runPublish(topic: "gate/tls", payload: "wrong CA", trust: .caFile(unrelated))
        expectTLSFailure(wrongCA)
        let plaintext = try broker.runPublish(topic: "gate/tls", payload: "plaintext", trust: .plaintext)
        #expect(plaintext.status == 7, "\(plaintext.summary)")
        // A recorder that trusts the wrong CA cannot even start.
        #expect(throws: MosquittoBroker.Failure.self) {
            _ = try MQTTRecorder(broker, trust: .caFile(unrelated), readyWithin: .seconds(3))
        }

        try broker.publish(topic: "gate/tls", payload: "still fine")
        #expect(recorder.waitForMessages(topic: "gate/tls", count: 2) == ["right CA", "still fine"])
    }

    @Test func passwordModeAcceptsOnlyTheRightPassword() throws {
        let broker = try MosquittoBroker(.password(users: ["gate": "s3cret pw", "alice": "other"]))
        #expect(broker.caFile == nil)
        #expect(broker.defaultCredentials?.username == "alice", "the first user by name is the default")
        let recorder = try MQTTRecorder(broker)

        try broker.publish(topic: "gate/pw", payload: "default user")
        try broker.publish(topic: "gate/pw", payload: "gate user", credentials: .user("gate", password: "s3cret pw"))
        let wrong = try broker.runPublish(
            topic: "gate/pw",
            payload: "wrong",
            credentials: .user("gate", password: "nope")
        )
        #expect(wrong.status == 5, "\(wrong.summary)")
        let anonymous = try broker.runPublish(topic: "gate/pw", payload: "anonymous", credentials: .anonymous)
        #expect(anonymous.status == 5, "\(anonymous.summary)")
        let unknown = try broker.runPublish(
            topic: "gate/pw",
            payload: "unknown",
            credentials: .user("mallory", password: "s3cret pw")
        )
        #expect(unknown.status == 5, "\(unknown.summary)")
        #expect(throws: MosquittoBroker.Failure.self) {
            _ = try MQTTRecorder(broker, credentials: .anonymous, readyWithin: .seconds(3))
        }

        try broker.publish(topic: "gate/pw", payload: "last")
        #expect(recorder.waitForMessages(topic: "gate/pw", count: 3) == ["default user", "gate user", "last"])
    }

    @Test func tlsAndPasswordNeedBoth() throws {
        let broker = try MosquittoBroker(.tlsAndPassword(users: ["gate": "pw"]))
        let unrelated = try MosquittoBroker.makeUnrelatedCA(in: broker.directory.appendingPathComponent("other"))
        let recorder = try MQTTRecorder(broker)

        try broker.publish(topic: "gate/both", payload: "ok")
        let wrongCA = try broker.runPublish(topic: "gate/both", payload: "x", trust: .caFile(unrelated))
        expectTLSFailure(wrongCA)
        let wrongPassword = try broker.runPublish(
            topic: "gate/both",
            payload: "x",
            credentials: .user("gate", password: "PW")
        )
        #expect(wrongPassword.status == 5, "\(wrongPassword.summary)")
        let plaintext = try broker.runPublish(topic: "gate/both", payload: "x", trust: .plaintext)
        #expect(plaintext.status == 7, "\(plaintext.summary)")
        try broker.publish(topic: "gate/both", payload: "ok again")
        #expect(recorder.waitForMessages(topic: "gate/both", count: 2) == ["ok", "ok again"])
    }

    @Test(arguments: [MosquittoBroker.Security.plain, .tlsAndPassword(users: ["gate": "pw"])])
    func killThenRestartOnTheSamePort(security: MosquittoBroker.Security) throws {
        let broker = try MosquittoBroker(security)
        let port = broker.port
        let firstPID = broker.pid
        let recorder = try MQTTRecorder(broker)

        broker.kill()
        #expect(!broker.isRunning)
        #expect(Glibc.kill(firstPID, 0) == -1, "SIGKILLed and reaped")
        #expect(!MosquittoBroker.acceptsConnections(port: port))
        let refused = try broker.runPublish(topic: "gate/restart", payload: "while down")
        #expect(refused.status != 0)

        try broker.restart()
        #expect(broker.isRunning)
        #expect(broker.port == port)
        #expect(broker.pid != firstPID)
        let fresh = try MQTTRecorder(broker)
        try broker.publish(topic: "gate/restart", payload: "after restart")
        #expect(fresh.waitForMessages(topic: "gate/restart") == ["after restart"])

        // The recorder from before the kill connects and subscribes again (the recorder restarts
        // mosquitto_sub, which exits on a TLS port when the broker goes); waitUntilSubscribed()
        // tells when, since what is published before then is lost.
        try recorder.waitUntilSubscribed()
        try broker.publish(topic: "gate/reconnected", payload: "hello")
        #expect(recorder.waitForMessages(topic: "gate/reconnected") == ["hello"], "\(recorder.errorText)")
        #expect(!recorder.messages(topic: "gate/restart").contains("while down"), "never reached the broker")
        #expect(
            broker.logText.components(separatedBy: "mosquitto version 2.0.11 running").count == 3,
            "two starts in one log"
        )

        // restart() of a running broker stops it first.
        try broker.restart()
        try fresh.waitUntilSubscribed()
        try broker.publish(topic: "gate/restart", payload: "twice")
        #expect(
            fresh.waitForMessages(topic: "gate/restart", count: 2, within: .seconds(10)) == ["after restart", "twice"]
        )
    }

    @Test func restartWaitsWhileThePortIsTaken() throws {
        let broker = try MosquittoBroker()
        let port = broker.port
        broker.kill()

        let blocker = try listen(on: port)
        #expect(throws: MosquittoBroker.Failure.self) { try broker.restart(timeout: .seconds(1)) }
        #expect(!broker.isRunning)
        #expect(broker.logText.contains("Address already in use"))

        // Freed while restart() is retrying: it gets the port.
        let release = Thread { [blocker] in
            Thread.sleep(forTimeInterval: 0.7)
            close(blocker)
        }
        release.start()
        try broker.restart(timeout: .seconds(10))
        #expect(broker.isRunning)
        #expect(broker.port == port)
        let recorder = try MQTTRecorder(broker)
        try broker.publish(topic: "gate/port", payload: "mine again")
        #expect(recorder.waitForMessages(topic: "gate/port") == ["mine again"])
    }

    /// A TCP listener on 127.0.0.1:`port` (SO_REUSEADDR, like mosquitto's own).
    private func listen(on port: UInt16) throws -> Int32 {
        do {
            return try LoopbackSocket.descriptor(.tcp, port: port, listen: 1, reuseAddress: true).fd
        } catch {
            throw MosquittoBroker.Failure("cannot hold port \(port): \(error)")
        }
    }

    @Test func retainedFlagIsRecorded() throws {
        let broker = try MosquittoBroker()
        try broker.publish(topic: "gate/state", payload: "closed", retained: true)
        let recorder = try MQTTRecorder(broker)
        let stored = recorder.received(topic: "gate/state")
        #expect(stored == [MQTTRecorder.Message(topic: "gate/state", payload: Array("closed".utf8), retained: true)])

        // Live messages carry the flag 0 under MQTT 3.1.1, even when published retained.
        try broker.publish(topic: "gate/state", payload: "open", retained: true)
        try broker.publish(topic: "gate/state", payload: "plain")
        #expect(recorder.waitForMessages(topic: "gate/state", count: 3) == ["closed", "open", "plain"])
        #expect(recorder.received(topic: "gate/state").map(\.retained) == [true, false, false])

        // A later recorder gets the latest retained value, flagged.
        let later = try MQTTRecorder(broker, topic: "gate/#")
        #expect(
            later.received == [MQTTRecorder.Message(topic: "gate/state", payload: Array("open".utf8), retained: true)]
        )
    }

    @Test func brokersAreIsolatedAndCleanedUp() throws {
        var first: MosquittoBroker? = try MosquittoBroker()
        let second = try MosquittoBroker()
        let pid = first!.pid
        let directory = first!.directory
        let port = first!.port
        #expect(port != second.port)
        #expect(directory != second.directory)
        let firstRecorder = try MQTTRecorder(first!)
        let secondRecorder = try MQTTRecorder(second)
        try first!.publish(topic: "gate/which", payload: "first")
        try second.publish(topic: "gate/which", payload: "second")
        #expect(firstRecorder.waitForMessages(topic: "gate/which") == ["first"])
        #expect(secondRecorder.waitForMessages(topic: "gate/which") == ["second"])

        #expect(Glibc.kill(pid, 0) == 0)
        firstRecorder.stop()
        #expect(!firstRecorder.isRunning)
        #expect(firstRecorder.messages(topic: "gate/which") == ["first"], "still readable after stop()")
        first = nil
        #expect(Glibc.kill(pid, 0) == -1, "deinit stopped mosquitto")
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(!MosquittoBroker.acceptsConnections(port: port))
    }

    @Test func stopEndsTheBrokerCleanly() throws {
        let broker = try MosquittoBroker(.password(users: ["gate": "pw"]))
        broker.stop()
        #expect(!broker.isRunning)
        #expect(!MosquittoBroker.acceptsConnections(port: broker.port))
        #expect(broker.logText.contains("mosquitto version 2.0.11 terminating"), "\(broker.logText)")
    }
}
