import Foundation
import GateTestSupport
import Testing

/// One environment (so one runtime folder: one lock, one status, one history)
/// shared by every `gate` a test starts.
private func sharedEnvironment() -> [String: String] {
    GateRunner.isolatedEnvironment()
}

private func statusState(_ environment: [String: String]) -> String? {
    guard let folder = environment["GATE_RUNTIME_DIR"],
        let data = FileManager.default.contents(atPath: folder + "/status.json"),
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    else { return nil }
    return object["state"] as? String
}

/// Waits (bounded) until the status file shows `state`.
private func waitForState(
    _ state: String,
    _ environment: [String: String],
    within timeout: Duration = .seconds(10)
) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if statusState(environment) == state { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return false
}

@Suite("One lock for every opener, cooldown, history", .serialized)
struct GateLockTests {
    @Test("20 openers racing one long opening: one activation, 20 refusals naming the holder")
    func race() throws {
        let sim = try Simulator(["--hold-ms", "1500"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let environment = sharedEnvironment()
        let long = try GateRunner.start(["open", "--config", config.path, "--json"], environment: environment)
        #expect(waitForState("waiting_for_relay_close", environment), "the long opening never reached the relay")

        let racers = try (0..<20).map { _ in
            try GateRunner.start(
                ["open", "--config", config.path, "--json", "--source", "racer"],
                environment: environment
            )
        }
        let results = try racers.map { try $0.finish(timeout: .seconds(20)) }
        #expect(long.process.isRunning, "every refusal must come while the long opening still holds the lock")
        for run in results {
            #expect(run.status == 75, "\(run.summary)")
            let json = try run.json()
            #expect(json["error"] as? String == "operationInProgress")
            let message = json["message"] as? String ?? ""
            #expect(message.contains("pid \(long.pid)"), "the holder must be named: \(message)")
            #expect(message.contains("(cli)"))
        }
        let first = try long.finish(timeout: .seconds(20))
        #expect(first.status == 0, "\(first.summary)")
        #expect(try sim.activations().count == 1, "exactly one activation for 21 openers")
    }

    @Test("A second opening inside the cooldown is refused with the time left; --force skips the cooldown")
    func cooldown() throws {
        let sim = try Simulator(["--hold-ms", "50"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 30")
        let environment = sharedEnvironment()
        let first = try GateRunner.run(["open", "--config", config.path], environment: environment)
        #expect(first.status == 0, "\(first.summary)")
        let refused = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
        #expect(refused.status == 75, "\(refused.summary)")
        let message = try refused.json()["message"] as? String ?? ""
        #expect(message.contains("cooldown") && message.contains("s left"), "\(message)")
        let forced = try GateRunner.run(["open", "--config", config.path, "--force"], environment: environment)
        #expect(forced.status == 0, "\(forced.summary)")
        #expect(try sim.activations().count == 2, "the refused opening sent nothing")
    }

    @Test("Openings that never reached an adapter do not start a cooldown")
    func noCooldownWithoutTrigger() throws {
        let sim = try Simulator(["--hold-ms", "50"])
        let environment = sharedEnvironment()
        let bad = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 30")
        // --via mqtt without [mqtt]: a configuration error, nothing sent.
        let refused = try GateRunner.run(["open", "--via", "mqtt", "--config", bad.path], environment: environment)
        #expect(refused.status == 78)
        let run = try GateRunner.run(["open", "--config", bad.path], environment: environment)
        #expect(run.status == 0, "\(run.summary)")
    }

    @Test("History after three openings: who, adapter, outcome, oldest first; --limit")
    func history() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
        let environment = sharedEnvironment()
        for source in ["cli", "widget", "button"] {
            let run = try GateRunner.run(
                ["open", "--config", config.path, "--source", source],
                environment: environment
            )
            #expect(run.status == 0, "\(run.summary)")
        }
        let listed = try GateRunner.run(["history", "--json"], environment: environment)
        #expect(listed.status == 0, "\(listed.summary)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]])
        #expect(entries.map { $0["source"] as? String } == ["cli", "widget", "button"])
        #expect(entries.allSatisfy { $0["adapter"] as? String == "udp" && $0["outcome"] as? String == "success" })
        #expect(entries.allSatisfy { ($0["duration_ms"] as? Int ?? 0) >= 20 })
        #expect(entries.allSatisfy { $0["uid"] as? Int == Int(getuid()) })
        let stamps = entries.compactMap { $0["at"] as? String }
        #expect(stamps == stamps.sorted())

        let lastTwo = try GateRunner.run(["history", "--json", "--limit", "2"], environment: environment)
        let two = try #require(try JSONSerialization.jsonObject(with: Data(lastTwo.stdout.utf8)) as? [[String: Any]])
        #expect(two.map { $0["source"] as? String } == ["widget", "button"])

        let text = try GateRunner.run(["history"], environment: environment)
        #expect(text.stdout.split(separator: "\n").count == 3)
        #expect(text.stdout.contains("widget"))
    }

    @Test("The lock and status files let the group share them (0660, 0664) whatever the umask")
    func fileModes() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let environment = sharedEnvironment()
        #expect(try GateRunner.run(["open", "--config", config.path], environment: environment).status == 0)
        let folder = try #require(environment["GATE_RUNTIME_DIR"])
        let lock = try FileManager.default.attributesOfItem(atPath: folder + "/lock")
        let status = try FileManager.default.attributesOfItem(atPath: folder + "/status.json")
        let state = try #require(environment["GATE_STATE_DIR"])
        let history = try FileManager.default.attributesOfItem(atPath: state + "/history.jsonl")
        #expect((lock[.posixPermissions] as? Int) == 0o660)
        #expect((status[.posixPermissions] as? Int) == 0o664)
        #expect((history[.posixPermissions] as? Int) == 0o664, "other members of the group append too")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix(".tmp-") }
        #expect(leftovers.isEmpty, "no temporary files left behind: \(leftovers)")
    }

    @Test("A reader that closes gate's stdout at once does not stop the opening's bookkeeping")
    func closedStdout() throws {
        let sim = try Simulator(["--hold-ms", "300"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let environment = sharedEnvironment()
        let gate = try GateRunner.binary().path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // head exits without reading: every write gate makes to the pipe gets EPIPE.
        process.arguments = ["-c", "'\(gate)' open --config '\(config.path)' | head -c 0; exit ${PIPESTATUS:-0}"]
        process.environment = environment
        try process.run()
        process.waitUntilExit()
        let history = try GateRunner.run(["history", "--json"], environment: environment)
        let entries = try #require(
            try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]]
        )
        #expect(entries.count == 1, "the opening must be recorded: \(history.summary)")
        #expect(entries.first?["outcome"] as? String == "success")
        #expect(statusState(environment) == "ready")
    }

    @Test("A status file after a failure carries reset_at and the last outcome")
    func failureStatus() throws {
        let sim = try Simulator(["--fault", "garbage"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let environment = sharedEnvironment()
        let run = try GateRunner.run(["open", "--config", config.path], environment: environment)
        #expect(run.status == 76)
        let folder = try #require(environment["GATE_RUNTIME_DIR"])
        let data = try #require(FileManager.default.contents(atPath: folder + "/status.json"))
        let status = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(status["state"] as? String == "error")
        #expect(status["reset_at"] is String)
        let last = try #require(status["last"] as? [String: Any])
        #expect(last["outcome"] as? String == "error")
        #expect(last["error"] as? String == "invalidResponse")
        #expect(last["source"] as? String == "cli")
    }
}
