import GateCore
import GateSystem
import GateTestSupport
import Testing

/// One `OpeningPipeline` in process: its own runtime folder, a clock the test moves by
/// hand, logs kept in memory, and, when asked for, a status feed standing for the
/// daemon's warm link. No child process, no network unless an adapter brings one.
struct PipelineBench {
    let runtime: TemporaryRuntime
    let clock: ManualOpeningClock
    let logs: LogCapture
    let feed: FakeStatusFeed?

    init(
        feed: FakeStatusFeed? = nil,
        logs: LogCapture = LogCapture(),
        clock: ManualOpeningClock = ManualOpeningClock()
    ) throws {
        runtime = try TemporaryRuntime()
        self.clock = clock
        self.logs = logs
        self.feed = feed
    }

    /// A pipeline whose adapters are `adapters` (scripted, or real ones built by the test).
    func pipeline(_ adapters: [any GateAdapter]) -> OpeningPipeline {
        OpeningPipeline(
            paths: runtime.paths,
            adapters: AdapterFactory(custom: ScriptedAdapter.factory(adapters)),
            statusFeed: feed,
            logger: logs.logger(),
            interfaces: { .success([]) },
            clock: clock
        )
    }

    func pipeline(_ adapters: ScriptedAdapter...) -> OpeningPipeline {
        pipeline(adapters)
    }

    /// Runs one opening to its end. A watchdog, not a measurement: an opening still running
    /// after `patience` of real time is recorded as a failure, and the clock is then moved
    /// on until the pipeline gives up, so that a broken rule fails the test instead of
    /// hanging the run. Generous on purpose (see `eventually`): a passing opening never
    /// waits for it.
    func open(
        _ pipeline: OpeningPipeline,
        config: GateConfig,
        request: OpeningRequest = OpeningRequest(source: "test"),
        patience: Duration = .seconds(300),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> OpeningResult {
        let clock = self.clock
        return await withTaskGroup(of: OpeningResult?.self) { group in
            group.addTask { await pipeline.open(config: config, request: request) }
            group.addTask {
                do {
                    try await Task.sleep(for: patience)
                } catch {
                    return nil
                }
                Issue.record(
                    "the opening was still running after \(patience); moving its clock on",
                    sourceLocation: sourceLocation
                )
                while !Task.isCancelled {
                    clock.advance(by: .seconds(10))
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return nil
            }
            var result: OpeningResult?
            while let next = await group.next() {
                if let next {
                    result = next
                    group.cancelAll()
                }
            }
            return result!
        }
    }

    /// `[udp]` at 127.0.0.1 (loopback: always planned) and `[mqtt]`, as asked.
    static func config(
        udp: Bool = true,
        mqtt: Bool = true,
        udpPort: Int = 8080,
        mqttPort: Int = 1883,
        udpTimeout: Double = 2,
        mqttTimeout: Double = 5,
        cooldown: Double = 2
    ) -> GateConfig {
        GateConfig(
            udp: udp ? UDPConfig(host: "127.0.0.1", port: udpPort, timeout: udpTimeout) : nil,
            mqtt: mqtt ? MQTTConfig(host: "127.0.0.1", port: mqttPort, timeout: mqttTimeout) : nil,
            runtime: RuntimeConfig(resetDelay: 3, cooldown: cooldown)
        )
    }
}

/// An attempt as the tests compare it: everything but its duration.
struct AttemptSummary: Hashable, CustomStringConvertible {
    var adapter: AdapterKind
    var outcome: AttemptOutcome
    var triggerSent: Bool
    var reason: AttemptReason?

    init(_ adapter: AdapterKind, _ outcome: AttemptOutcome, sent triggerSent: Bool, _ reason: AttemptReason? = nil) {
        self.adapter = adapter
        self.outcome = outcome
        self.triggerSent = triggerSent
        self.reason = reason
    }

    init(_ record: AttemptRecord) {
        self.init(record.adapter, record.outcome, sent: record.triggerSent, record.reason)
    }

    var description: String {
        "\(adapter) \(outcome.rawValue) trigger_sent=\(triggerSent)" + (reason.map { " (\($0))" } ?? "")
    }
}

extension OpeningResult {
    var summaries: [AttemptSummary] { attempts.map(AttemptSummary.init) }

    /// Adapter, outcome and trigger_sent of each attempt, reasons left out.
    var shape: [AttemptSummary] {
        attempts.map { AttemptSummary($0.adapter, $0.outcome, sent: $0.triggerSent) }
    }
}
