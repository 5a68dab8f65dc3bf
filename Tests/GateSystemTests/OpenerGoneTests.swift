import GateCore
import GateSystem
import GateTestSupport
import Synchronization
import Testing

/// An opening asked for by another process (the control socket's client): the permit
/// asks whether that process is still there right before each trigger, and the history
/// records its uid (docs/CONTRACT.md#the-control-socket).
@Suite("OpeningPipeline: the opener that hung up, in process")
struct OpenerGoneTests {
    private static let mqttCycle: [ScriptedAdapter.Step] = [
        .send, .report(.relay(.activated)), .report(.relay(.released)), .finish,
    ]

    @Test(
        "An opener gone before the trigger: no adapter sends, the opening ends 69 saying so, history names the requester"
    )
    func goneBeforeTrigger() async throws {
        let bench = try PipelineBench()
        let udp = ScriptedAdapter(.udp, script: [.send, .finish])
        let mqtt = ScriptedAdapter(.mqtt, script: [.send, .finish])
        let request = OpeningRequest(source: "desk", requester: 4242, openerGone: { true })
        let result = await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config(), request: request)

        #expect(udp.triggersSent == 0 && mqtt.triggersSent == 0, "a trigger left for an opener that was gone")
        #expect(mqtt.attempts.isEmpty, "MQTT was started for an opener that was gone")
        #expect(result.error == .allAdaptersFailed, "\(result.message)")
        #expect(result.adapter == nil)
        #expect(
            result.summaries == [
                // The opening ends there: no adapter is started for an opener that is gone.
                AttemptSummary(.udp, .unreachable, sent: false, .withheld(.openerGone))
            ],
            "\(bench.logs.text)"
        )
        #expect(result.message.contains("hung up before the trigger; nothing was sent"), "\(result.message)")
        #expect(bench.runtime.history().map(\.uid) == [4242])
    }

    @Test(
        "An opener that hangs up as its trigger leaves: the trigger is recorded as sent and the opening goes on to its result"
    )
    func goneAfterTrigger() async throws {
        let bench = try PipelineBench()
        let gone = Mutex(false)
        let udp = ScriptedAdapter(
            .udp,
            script: [
                .sendRunning { gone.withLock { $0 = true } }, .report(.relay(.activated)),
                .report(.relay(.released)), .finish,
            ]
        )
        let mqtt = ScriptedAdapter(.mqtt, script: Self.mqttCycle)
        let request = OpeningRequest(source: "desk", requester: 4242, openerGone: { gone.withLock { $0 } })
        let result = await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config(), request: request)

        #expect(udp.triggersSent == 1 && mqtt.triggersSent == 0)
        #expect(result.error == nil, "\(result.message)")
        #expect(result.summaries == [AttemptSummary(.udp, .success, sent: true)], "\(bench.logs.text)")
        #expect(bench.runtime.history().map(\.uid) == [4242])
    }
}
