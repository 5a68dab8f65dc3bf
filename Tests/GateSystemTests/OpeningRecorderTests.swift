import Foundation
import GateCore
import GateSystem
import GateTestSupport
import Logging
import Testing

/// The history line's time minus its duration is when the opening began
/// (docs/CONTRACT.md#the-history), however long the opener took to conclude after its
/// decisive event: the explorer's seed 574 (a daemon that waited for its watch's sync
/// after the deadline wrote a 1.0 s timeout 2 s after its trigger, so the line seemed to
/// begin after the activation it caused).
@Suite struct OpeningRecorderTests {
    @Test func theHistoryDurationCoversTheWholeOpening() throws {
        let runtime = try TemporaryRuntime()
        let recorder = try OpeningRecorder.begin(
            paths: runtime.paths,
            source: "cli",
            runtime: RuntimeConfig(resetDelay: 0.1, cooldown: 0),
            force: false,
            logger: Logger(label: "test")
        )
        // Concluded 300 ms after it began, by an event stamped 5 ms after it began.
        Thread.sleep(forTimeInterval: 0.3)
        let result = OpeningResult(
            error: .operationTimeout,
            adapter: .udp,
            duration: .milliseconds(5),
            attempts: []
        )
        recorder.finished(result)
        let text = try String(contentsOfFile: runtime.paths.historyFile, encoding: .utf8)
        let entry = try #require(HistoryEntry(line: Array(text.utf8).dropLast()), "\(text)")
        #expect(entry.durationMs >= 300, "\(text)")
    }
}
