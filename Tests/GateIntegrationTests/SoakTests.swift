import Foundation
import GateTestSupport
import Testing

/// The short soak of the normal test run (issue 7): consecutive openings sharing one
/// runtime folder, as on an appliance, each confirmed, each exactly one activation.
/// The long run (1000) is `scripts/soak`.
@Suite("Soak", .serialized)
struct SoakTests {
    @Test("100 consecutive openings: 100 confirmations, exactly 100 activations, 100 history lines")
    func hundredOpenings() throws {
        let sim = try Simulator(["--hold-ms", "20"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort, extra: "[runtime]\ncooldown = 0")
        let environment = GateRunner.isolatedEnvironment()
        var failures: [String] = []
        for index in 0..<100 {
            let run = try GateRunner.run(["open", "--config", config.path, "--json"], environment: environment)
            if run.status != 0 { failures.append("opening \(index): \(run.summary)") }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(try sim.activations().count == 100)
        let history = try GateRunner.run(["history", "--json", "--limit", "1000"], environment: environment)
        let entries = try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]]
        #expect(entries?.count == 100, "\(history.summary)")
        #expect(entries?.allSatisfy { $0["outcome"] as? String == "success" } == true)
    }
}
