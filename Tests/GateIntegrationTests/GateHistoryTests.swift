import Foundation
import GateTestSupport
import Testing

/// `gate history` as a person reads it: local time with its offset, errors in words;
/// `--json` keeps the file's UTC times and error names (docs/CONTRACT.md#gate-history).
@Suite("gate history in words and local time", .serialized)
struct GateHistoryTests {
    /// Two summer openings (Berlin +02:00; the first past midnight there) and a winter one (+01:00).
    static let entries = [
        #"{"at":"2026-07-01T22:30:00.999Z","source":"button","uid":0,"adapter":"udp","outcome":"timeout","error":"operationTimeout","duration_ms":2001}"#,
        #"{"at":"2026-07-02T06:00:00.000Z","source":"widget","uid":1000,"adapter":null,"outcome":"error","error":"allAdaptersFailed","duration_ms":3}"#,
        #"{"at":"2026-11-27T09:15:02.250Z","source":"cli","uid":1000,"adapter":"udp","outcome":"success","error":null,"duration_ms":412}"#,
    ]

    static func history(zone: String, json: Bool = false) throws -> GateRun {
        let environment = GateRunner.isolatedEnvironment(["TZ": zone])
        let state = try #require(environment["GATE_STATE_DIR"])
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try (entries.joined(separator: "\n") + "\n").write(
            toFile: state + "/history.jsonl",
            atomically: false,
            encoding: .utf8
        )
        return try GateRunner.run(["history"] + (json ? ["--json"] : []), environment: environment)
    }

    @Test("Europe/Berlin: each time in its own offset (+01:00 in winter, +02:00 in summer), errors in words")
    func berlin() throws {
        let run = try Self.history(zone: "Europe/Berlin")
        #expect(run.status == 0, "\(run.summary)")
        #expect(
            run.stdout == """
                2026-07-02 00:30:00 +02:00  button (uid 0)  udp  timeout (relay cycle not confirmed)  2001 ms
                2026-07-02 08:00:00 +02:00  widget (uid 1000)  -  error (ESP32 not reached)  3 ms
                2026-11-27 10:15:02 +01:00  cli (uid 1000)  udp  success  412 ms

                """,
            "\(run.summary)"
        )
    }

    @Test("UTC, and a zone with half hours west of UTC")
    func otherZones() throws {
        let utc = try Self.history(zone: "UTC")
        #expect(utc.status == 0, "\(utc.summary)")
        #expect(
            utc.stdout.hasSuffix("\n2026-11-27 09:15:02 +00:00  cli (uid 1000)  udp  success  412 ms\n"),
            "\(utc.summary)"
        )
        #expect(utc.stdout.hasPrefix("2026-07-01 22:30:00 +00:00  button"), "\(utc.summary)")
        let newfoundland = try Self.history(zone: "America/St_Johns")
        #expect(newfoundland.stdout.contains("2026-07-01 20:00:00 -02:30  button"), "\(newfoundland.summary)")
        #expect(newfoundland.stdout.contains("2026-11-27 05:45:02 -03:30  cli"), "\(newfoundland.summary)")
    }

    @Test("--json keeps the file's UTC times and the error names, whatever the zone")
    func jsonKeepsUTC() throws {
        let run = try Self.history(zone: "Europe/Berlin", json: true)
        #expect(run.status == 0, "\(run.summary)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]])
        #expect(
            entries.map { $0["at"] as? String }
                == ["2026-07-01T22:30:00.999Z", "2026-07-02T06:00:00.000Z", "2026-11-27T09:15:02.250Z"]
        )
        #expect(entries.map { $0["error"] as? String } == ["operationTimeout", "allAdaptersFailed", nil])
    }

    @Test("A line's time minus its duration is when the opening began, however slow the disk (fsync 400 ms)")
    func durationEndsAtTheLinesTime() throws {
        let sim = try Simulator(["--hold-ms", "100"])
        let config = try TestConfig.udp(host: "127.0.0.1", port: sim.udpPort)
        let shim = try SlowDiskShim(fsyncMilliseconds: 400)
        let environment = GateRunner.isolatedEnvironment()
        var slow = environment
        slow["LD_PRELOAD"] = shim.path
        let started = Date()
        let run = try GateRunner.run(["open", "--direct", "--config", config.path], environment: slow)
        #expect(run.status == 0, "\(run.summary)")
        let entry = try #require(try DaemonFiles.history(environment: environment).last)
        let at = try #require((entry["at"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
        let duration = try #require(entry["duration_ms"] as? Int)
        let began = at.addingTimeInterval(-Double(duration) / 1000)
        // The line's time is read before the last status file's fsync; its duration was
        // read after it, so the opening seemed to begin 400 ms before the process started.
        #expect(began >= started.addingTimeInterval(-0.005), "\(entry), started \(started)")
    }
}
