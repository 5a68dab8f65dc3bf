import GateCore
import GateSystem
import GateTestSupport
import Synchronization
import Testing

/// The one opening pipeline, in process, with scripted adapters and a clock moved by
/// hand: one test per rule of docs/CONTRACT.md#evidence-and-time, and the exit-code line
/// between 69 and 124. What each scripted adapter really sent through the permit is
/// checked beside what the result says.
@Suite("OpeningPipeline: docs/CONTRACT.md#evidence-and-time, in process")
struct OpeningPipelineTests {
    private static let activated = ScriptedAdapter.Step.report(.relay(.activated))
    private static let released = ScriptedAdapter.Step.report(.relay(.released))
    /// An MQTT attempt that answers a full cycle: what a fallback would do, so that a
    /// wrong fallback shows as a second trigger.
    private static let mqttCycle: [ScriptedAdapter.Step] = [.send, activated, released, .finish]

    // MARK: - The budget covers the whole attempt

    enum LateSend: String, CaseIterable, CustomTestStringConvertible {
        /// The attempt's thread comes back from resolving after the deadline, before the
        /// pipeline even read its first event.
        case resolvedLate
        /// The attempt's thread is still resolving when the clock passes the deadline (the
        /// pipeline's timer closes the permit), and tries to send afterwards.
        case stuckPastTheDeadline
        var testDescription: String { rawValue }
    }

    @Test(
        "The budget covers the whole attempt: a send after the deadline is withheld, and the next adapter goes",
        arguments: LateSend.allCases
    )
    func budgetCoversTheWholeAttempt(_ late: LateSend) async throws {
        let bench = try PipelineBench()
        let resolved = ScriptLatch()
        let udpScript: [ScriptedAdapter.Step]
        switch late {
        case .resolvedLate:
            udpScript = [.doing("resolving gate.local"), .passDeadline(bench.clock), .send, .finish]
        case .stuckPastTheDeadline:
            udpScript = [.doing("resolving gate.local"), .wait(resolved), .send, .finish]
        }
        let udp = ScriptedAdapter(.udp, script: udpScript)
        let mqttSent = Mutex<MonotonicInstant?>(nil)
        let clock = bench.clock
        let mqtt = ScriptedAdapter(
            .mqtt,
            script: [.sendRunning { mqttSent.withLock { $0 = clock.now() } }, Self.activated, Self.released, .finish]
        )
        let pipeline = bench.pipeline(udp, mqtt)

        let opening = Task { await bench.open(pipeline, config: PipelineBench.config()) }
        if late == .stuckPastTheDeadline {
            #expect(await eventually { udp.attempts.first?.isWaiting == true }, "the UDP attempt never started")
            let deadline = try #require(udp.attempts.first).deadline
            bench.clock.advance(to: deadline + .milliseconds(1))
            resolved.open()
        }
        let result = await opening.value

        #expect(udp.triggersSent == 0, "a UDP trigger left after its deadline")
        #expect(udp.sendsWithheld == 1)
        #expect(mqtt.triggersSent == 1)
        #expect(result.error == nil, "\(result.message)")
        #expect(result.adapter == .mqtt)
        #expect(
            result.summaries == [
                AttemptSummary(
                    .udp,
                    .unreachable,
                    sent: false,
                    .withheld(.budgetSpent(during: "resolving gate.local"))
                ),
                AttemptSummary(.mqtt, .success, sent: true),
            ],
            "\(bench.logs.text)"
        )
        // The one trigger stamped for the cooldown is MQTT's.
        let stamped = bench.runtime.lockRecord?.triggeredMonotonicNs
        #expect(stamped != nil && stamped == mqttSent.withLock { $0 }?.nanoseconds)
        // The log says the same, line by line.
        let finished = bench.logs.entries(message: "adapter finished").map {
            [$0.metadata["adapter"], $0.metadata["trigger_sent"]]
        }
        #expect(finished == [["udp", "false"], ["mqtt", "true"]], "\(bench.logs.text)")
    }

    // MARK: - Evidence from any channel counts

    enum FeedEvidence: String, CaseIterable, CustomTestStringConvertible {
        /// `1` then `0` on the status topic after the UDP trigger: the cycle, confirmed.
        case fullCycle
        /// `1` alone, then the UDP budget ends: the relay was reached, no fallback.
        case activationOnly
        var testDescription: String { rawValue }
    }

    @Test(
        "Evidence from any channel: the status feed's 1/0 after a UDP trigger counts, and no MQTT trigger follows",
        arguments: FeedEvidence.allCases
    )
    func evidenceFromAnyChannel(_ evidence: FeedEvidence) async throws {
        let feed = FakeStatusFeed()
        let bench = try PipelineBench(feed: feed)
        let udpScript: [ScriptedAdapter.Step]
        switch evidence {
        case .fullCycle:
            // The UDP answer itself never comes: only the status topic carries the cycle.
            udpScript = [
                .send, .run { _ in feed.deliver(.activated) }, .run { _ in feed.deliver(.released) }, .waitForCancel,
                .finish,
            ]
        case .activationOnly:
            udpScript = [
                .send, .run { _ in feed.deliver(.activated) }, .passDeadline(bench.clock), .report(.deadlineReached),
                .finish,
            ]
        }
        let udp = ScriptedAdapter(.udp, script: udpScript)
        let mqtt = ScriptedAdapter(.mqtt, script: Self.mqttCycle)

        let result = await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config())

        #expect(mqtt.attempts.isEmpty, "MQTT was tried after the relay answered on the status topic")
        #expect(udp.triggersSent + mqtt.triggersSent == 1)
        #expect(
            feed.attachments == 1 && feed.attached == 0,
            "the opening must attach to the feed and detach at its end"
        )
        switch evidence {
        case .fullCycle:
            #expect(result.error == nil, "\(result.message)\n\(bench.logs.text)")
            #expect(result.adapter == .udp)
            #expect(result.summaries == [AttemptSummary(.udp, .success, sent: true)])
        case .activationOnly:
            #expect(result.error == .operationTimeout)
            #expect(result.exitCode == 124)
            #expect(result.summaries == [AttemptSummary(.udp, .timeout, sent: true, .noRelease(budget: .seconds(2)))])
        }
    }

    enum StrayStatus: String, CaseIterable, CustomTestStringConvertible {
        /// A `0` with no `1` before it: the relay's release, so it was active: evidence.
        case loneRelease
        /// A payload outside the protocol on the topic: nobody's evidence.
        case garbage
        var testDescription: String { rawValue }
    }

    /// The permit and the machine must agree on what a stray status message means:
    /// a lone `0` is evidence (no fallback, 124); garbage is not (MQTT goes, and can confirm).
    @Test(
        "A stray status message after a UDP trigger: a lone 0 stops the fallback (124), garbage lets MQTT go",
        arguments: StrayStatus.allCases
    )
    func strayStatusAfterUDPTrigger(_ stray: StrayStatus) async throws {
        let feed = FakeStatusFeed()
        let bench = try PipelineBench(feed: feed)
        let report: RelayObserver.Report =
            stray == .loneRelease ? .released : .invalid(.unexpectedPayload(Array("x".utf8), count: 1, topic: "t"))
        let udp = ScriptedAdapter(
            .udp,
            script: [
                .send, .run { _ in feed.deliver(report) }, .report(.unreachable("ICMP port unreachable")), .finish,
            ]
        )
        let mqtt = ScriptedAdapter(.mqtt, script: Self.mqttCycle)

        let result = await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config())

        switch stray {
        case .loneRelease:
            #expect(mqtt.triggersSent == 0, "a second trigger after the relay was seen active")
            #expect(result.exitCode == 124, "\(result.message)\n\(bench.logs.text)")
            #expect(result.adapter == .udp)
        case .garbage:
            #expect(mqtt.triggersSent == 1, "\(result.message)\n\(bench.logs.text)")
            #expect(result.error == nil, "\(result.message)\n\(bench.logs.text)")
            #expect(result.adapter == .mqtt)
        }
    }

    // MARK: - Arrival time counts, not reading time

    enum Arrival: String, CaseIterable, CustomTestStringConvertible {
        /// `1` and `0` stamped before the deadline, read by the pipeline after it.
        case stampedBeforeReadAfter
        /// `1` stamped after the deadline: the relay was reached, the cycle not confirmed.
        case lateActivation
        var testDescription: String { rawValue }
    }

    @Test(
        "Arrival time counts: an answer stamped before the deadline counts when read after it; a late 1 is a timeout without fallback",
        arguments: Arrival.allCases
    )
    func arrivalTimeCounts(_ arrival: Arrival) async throws {
        let bench = try PipelineBench()
        let udpScript: [ScriptedAdapter.Step]
        switch arrival {
        case .stampedBeforeReadAfter:
            // The script runs before the pipeline reads a single event: by the time it
            // reads them, the clock is a second past the deadline.
            udpScript = [.send, Self.activated, Self.released, .passDeadline(bench.clock, by: .seconds(1)), .finish]
        case .lateActivation:
            udpScript = [.send, .passDeadline(bench.clock), Self.activated, .finish]
        }
        let udp = ScriptedAdapter(.udp, script: udpScript)
        let mqtt = ScriptedAdapter(.mqtt, script: Self.mqttCycle)

        let result = await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config())

        #expect(mqtt.attempts.isEmpty, "MQTT was tried although the ESP32 answered over UDP")
        switch arrival {
        case .stampedBeforeReadAfter:
            #expect(result.error == nil, "\(result.message)\n\(bench.logs.text)")
            #expect(result.summaries == [AttemptSummary(.udp, .success, sent: true)])
        case .lateActivation:
            #expect(result.error == .operationTimeout)
            #expect(result.exitCode == 124)
            #expect(
                result.summaries == [
                    AttemptSummary(.udp, .timeout, sent: true, .activatedAtDeadline(budget: .seconds(2)))
                ]
            )
            #expect(result.message.contains("may have cycled"))
        }
    }

    // MARK: - A busy relay is not triggered

    enum Busy: String, CaseIterable, CustomTestStringConvertible {
        /// The daemon's link knows the relay is active when the opening starts.
        case feedSaysActive
        /// A `1` comes on the feed during the UDP attempt, before its send.
        case feedActivationBeforeTheSend
        /// A `1` comes on the MQTT attempt's own subscription, before its publish.
        case ownSubscriptionBeforeThePublish
        var testDescription: String { rawValue }
    }

    @Test(
        "A busy relay is not triggered: nothing sent, operationInProgress (75), 'the relay is active'",
        arguments: Busy.allCases
    )
    func busyRelayIsNotTriggered(_ busy: Busy) async throws {
        let feed = FakeStatusFeed(relayActive: busy == .feedSaysActive)
        let bench = try PipelineBench(feed: feed)
        var config = PipelineBench.config()
        let udp: ScriptedAdapter
        let mqtt: ScriptedAdapter
        switch busy {
        case .feedSaysActive:
            udp = ScriptedAdapter(.udp, script: [.send, Self.activated, Self.released, .finish])
            mqtt = ScriptedAdapter(.mqtt, script: Self.mqttCycle)
        case .feedActivationBeforeTheSend:
            udp = ScriptedAdapter(
                .udp,
                script: [.run { _ in feed.deliver(.activated) }, .send, Self.activated, Self.released, .finish]
            )
            mqtt = ScriptedAdapter(.mqtt, script: Self.mqttCycle)
        case .ownSubscriptionBeforeThePublish:
            config.udp = nil
            udp = ScriptedAdapter(.udp, script: [.send, .finish])
            mqtt = ScriptedAdapter(
                .mqtt,
                script: [.observe(.activated), .send, Self.activated, Self.released, .finish]
            )
        }

        let result = await bench.open(bench.pipeline(udp, mqtt), config: config)

        #expect(udp.triggersSent + mqtt.triggersSent == 0, "a trigger was sent to a busy relay")
        #expect(result.error == .operationInProgress, "\(result.message)\n\(bench.logs.text)")
        #expect(result.exitCode == 75)
        #expect(result.message.contains("the relay is active"), "\(result.message)")
        #expect(bench.runtime.lockRecord?.triggeredMonotonicNs == nil)
        switch busy {
        case .feedSaysActive:
            #expect(udp.attempts.isEmpty && mqtt.attempts.isEmpty)
            #expect(result.attempts.isEmpty)
        case .feedActivationBeforeTheSend:
            #expect(mqtt.attempts.isEmpty, "another adapter was tried on a busy relay")
            #expect(result.summaries == [AttemptSummary(.udp, .skipped, sent: false, .withheld(.relayActive))])
        case .ownSubscriptionBeforeThePublish:
            #expect(
                result.summaries == [
                    AttemptSummary(.udp, .skipped, sent: false, .notConfigured(.udp)),
                    AttemptSummary(.mqtt, .skipped, sent: false, .withheld(.relayActive)),
                ]
            )
        }
    }

    // MARK: - The cooldown survives the opener

    @Test(
        "The cooldown survives the opener: the trigger is stamped in the lock file before it is sent, and the next opening is refused (75)"
    )
    func cooldownSurvivesTheOpener() async throws {
        let bench = try PipelineBench()
        let clock = bench.clock
        let runtime = bench.runtime
        // What the lock file said while the trigger left, and the clock at that moment.
        let atTheSend = Mutex<(text: String?, now: MonotonicInstant)?>(nil)
        let udp = ScriptedAdapter(
            .udp,
            script: [
                .sendRunning { atTheSend.withLock { $0 = (runtime.lockFileText, clock.now()) } }, Self.activated,
                Self.released, .finish,
            ]
        )
        let mqtt = ScriptedAdapter(.mqtt, script: Self.mqttCycle)
        // A long cooldown, so that a slow machine cannot outlive it between two openings.
        let config = PipelineBench.config(cooldown: 600)
        let pipeline = bench.pipeline(udp, mqtt)

        let first = await bench.open(pipeline, config: config)
        #expect(first.error == nil, "\(first.message)")
        let seen = try #require(atTheSend.withLock { $0 }, "the send never ran")
        let record = try #require(
            seen.text.flatMap { LockRecord(json: Array($0.utf8)) },
            "no lock record while the trigger left: \(seen.text ?? "nil")"
        )
        #expect(
            record.triggeredMonotonicNs == seen.now.nanoseconds,
            "the trigger was not stamped before it was sent: \(seen.text ?? "")"
        )
        #expect(record.endedMonotonicNs == nil)

        let second = await bench.open(pipeline, config: config)
        #expect(second.error == .operationInProgress)
        #expect(second.exitCode == 75)
        #expect(second.message.contains("cooldown"), "\(second.message)")
        #expect(
            udp.attempts.count == 1 && udp.triggersSent == 1 && mqtt.attempts.isEmpty,
            "the refused opening started an adapter"
        )

        // An opener killed right after its send leaves the lock file as it was then: no end.
        // Its trigger alone must hold the next opening back.
        let afterAKill = try PipelineBench()
        try afterAKill.runtime.paths.prepare().get()
        try afterAKill.runtime.writeLockFile(try #require(seen.text))
        let untouched = ScriptedAdapter(.udp, script: [.send, Self.activated, Self.released, .finish])
        let refused = await afterAKill.open(afterAKill.pipeline(untouched), config: config)
        #expect(refused.error == .operationInProgress, "\(refused.message)")
        #expect(refused.message.contains("cooldown"), "\(refused.message)")
        #expect(untouched.attempts.isEmpty)
    }

    // MARK: - The attempts list

    struct AttemptsCase: CustomTestStringConvertible, Sendable {
        let name: String
        let udpConfigured: Bool
        var mqttConfigured = true
        let udp: [ScriptedAdapter.Step]
        let mqtt: [ScriptedAdapter.Step]
        let expected: [AttemptSummary]
        let error: GateKeeperError?
        var testDescription: String { name }
    }

    static let attemptsCases: [AttemptsCase] = [
        AttemptsCase(
            name: "UDP confirms: UDP alone",
            udpConfigured: true,
            udp: [.send, activated, released, .finish],
            mqtt: mqttCycle,
            expected: [AttemptSummary(.udp, .success, sent: true)],
            error: nil
        ),
        AttemptsCase(
            name: "UDP confirms, MQTT not configured: nothing listed after UDP",
            udpConfigured: true,
            mqttConfigured: false,
            udp: [.send, activated, released, .finish],
            mqtt: mqttCycle,
            expected: [AttemptSummary(.udp, .success, sent: true)],
            error: nil
        ),
        AttemptsCase(
            name: "UDP refused at once by the network, MQTT confirms",
            udpConfigured: true,
            udp: [.send, .report(.unreachable("ICMP port unreachable")), .finish],
            mqtt: mqttCycle,
            expected: [AttemptSummary(.udp, .unreachable, sent: true), AttemptSummary(.mqtt, .success, sent: true)],
            error: nil
        ),
        AttemptsCase(
            name: "UDP answers garbage: UDP alone, no fallback",
            udpConfigured: true,
            udp: [.send, .report(.invalid(.unexpectedByte(0x7f))), .finish],
            mqtt: mqttCycle,
            expected: [AttemptSummary(.udp, .invalidResponse, sent: true)],
            error: .invalidResponse
        ),
        AttemptsCase(
            name: "UDP not configured: skipped before MQTT",
            udpConfigured: false,
            udp: [.send, .finish],
            mqtt: mqttCycle,
            expected: [AttemptSummary(.udp, .skipped, sent: false), AttemptSummary(.mqtt, .success, sent: true)],
            error: nil
        ),
        AttemptsCase(
            name: "UDP cannot run, MQTT unanswered",
            udpConfigured: true,
            udp: [.report(.misconfigured("no socket")), .finish],
            mqtt: [.send, .waitForCancel, .finish],
            expected: [
                AttemptSummary(.udp, .misconfigured, sent: false), AttemptSummary(.mqtt, .noAnswer, sent: true),
            ],
            error: .operationTimeout
        ),
    ]

    @Test(
        "The attempts list stops at the deciding attempt, and each attempt says whether its trigger was sent",
        arguments: attemptsCases
    )
    func attemptsListStopsAtTheDecidingAttempt(_ test: AttemptsCase) async throws {
        let bench = try PipelineBench()
        let udp = ScriptedAdapter(.udp, script: test.udp)
        let mqtt = ScriptedAdapter(.mqtt, script: test.mqtt)
        let opening = Task {
            await bench.open(
                bench.pipeline(udp, mqtt),
                config: PipelineBench.config(udp: test.udpConfigured, mqtt: test.mqttConfigured)
            )
        }
        if test.error == .operationTimeout {
            // The unanswered attempt waits for its deadline.
            #expect(await eventually { mqtt.attempts.first?.isWaiting == true })
            bench.clock.advance(to: try #require(mqtt.attempts.first).deadline + .seconds(1))
        }
        let result = await opening.value

        #expect(result.shape == test.expected, "\(result.summaries)")
        #expect(result.error == test.error, "\(result.message)")
        // What each record says matches what its adapter really did, and an adapter after the
        // deciding one never started.
        for (adapter, kind) in [(udp, AdapterKind.udp), (mqtt, .mqtt)] {
            if let record = result.attempts.first(where: { $0.adapter == kind }), record.outcome != .skipped {
                #expect(adapter.attempts.count == 1, "\(kind)")
                #expect(
                    record.triggerSent == (adapter.triggersSent == 1),
                    "\(kind): trigger_sent \(record.triggerSent), sent \(adapter.triggersSent)"
                )
            } else {
                #expect(adapter.attempts.isEmpty, "\(kind) ran although it is not listed as tried")
            }
        }
    }

    // MARK: - 69 or 124

    struct ExitCase: CustomTestStringConvertible, Sendable {
        let name: String
        let selection: AdapterSelection
        let udp: [ScriptedAdapter.Step]
        let mqtt: [ScriptedAdapter.Step]
        let error: GateKeeperError
        /// Whose trigger may have cycled the relay (124 only).
        let adapter: AdapterKind?
        var testDescription: String { name }
    }

    static let exitCases: [ExitCase] = [
        ExitCase(
            name: "nothing left the machine: 69",
            selection: .auto,
            udp: [.report(.unreachable("no route to host")), .finish],
            mqtt: [.report(.unreachable("connection refused")), .finish],
            error: .allAdaptersFailed,
            adapter: nil
        ),
        ExitCase(
            name: "the one trigger sent was refused at once (ICMP): 69",
            selection: .auto,
            udp: [.send, .report(.unreachable("ICMP port unreachable")), .finish],
            mqtt: [.report(.misconfigured("no password")), .finish],
            error: .allAdaptersFailed,
            adapter: nil
        ),
        ExitCase(
            name: "forced UDP, withheld at its deadline: 69",
            selection: .udp,
            udp: [.doing("resolving gate.local"), .waitForCancel, .send, .finish],
            mqtt: [.send, .finish],
            error: .udpConnectionFailed,
            adapter: nil
        ),
        ExitCase(
            name: "UDP sent, no answer; MQTT refused before sending: 124",
            selection: .auto,
            udp: [.send, .waitForCancel, .finish],
            mqtt: [.report(.unreachable("connection refused")), .finish],
            error: .operationTimeout,
            adapter: .udp
        ),
        ExitCase(
            name: "UDP sent, then its link was lost; MQTT refused: 124",
            selection: .auto,
            udp: [.send, .report(.lost("socket closed")), .finish],
            mqtt: [.report(.unreachable("connection refused")), .finish],
            error: .operationTimeout,
            adapter: .udp
        ),
        ExitCase(
            name: "UDP refused; MQTT published, no answer: 124",
            selection: .auto,
            udp: [.report(.unreachable("no route to host")), .finish],
            mqtt: [.send, .waitForCancel, .finish],
            error: .operationTimeout,
            adapter: .mqtt
        ),
    ]

    @Test("69 when nothing can have reached the relay, 124 when a trigger may have", arguments: exitCases)
    func exit69Or124(_ test: ExitCase) async throws {
        let bench = try PipelineBench()
        let udp = ScriptedAdapter(.udp, script: test.udp)
        let mqtt = ScriptedAdapter(.mqtt, script: test.mqtt)
        let request = OpeningRequest(source: "test", selection: test.selection)
        let done = Mutex(false)
        let opening = Task {
            let result = await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config(), request: request)
            done.withLock { $0 = true }
            return result
        }
        // Attempts that wait for their deadline get it, one after the other.
        var passed = Set<MonotonicInstant>()
        while !done.withLock({ $0 }) {
            for adapter in [udp, mqtt] {
                if let attempt = adapter.attempts.last, attempt.isWaiting, !passed.contains(attempt.deadline) {
                    passed.insert(attempt.deadline)
                    bench.clock.advance(to: attempt.deadline + .seconds(1))
                }
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        let result = await opening.value

        #expect(result.error == test.error, "\(result.message)\n\(result.summaries)")
        #expect(result.exitCode == (test.error == .operationTimeout ? 124 : 69))
        #expect(result.adapter == test.adapter)
        let sentAndNotRefused = result.attempts.contains { $0.triggerSent && $0.outcome != .unreachable }
        #expect(
            sentAndNotRefused == (result.exitCode == 124),
            "124 exactly when a trigger left and was not refused at once"
        )
        if result.exitCode == 124 {
            #expect(result.message.contains("may have cycled"), "\(result.message)")
        }
    }
}

/// docs/CONTRACT.md#exit-codes: an opening stopped from outside (the daemon stopping, its
/// service cancelled) ends by the permit's record of what left (issue 28 item 1: it
/// answered 69 with no attempts, after a UDP trigger had left).
@Suite("OpeningPipeline: a stopped opening's outcome comes from what left")
struct OpeningPipelineStopTests {
    struct StopCase: Sendable, CustomTestStringConvertible {
        let name: String
        let udp: [ScriptedAdapter.Step]
        let exitCode: Int32
        let adapter: AdapterKind?
        var testDescription: String { name }
    }

    static let cases: [StopCase] = [
        StopCase(
            name: "UDP sent, no answer yet: 124 naming udp",
            udp: [.send, .waitForCancel, .finish],
            exitCode: 124,
            adapter: .udp
        ),
        StopCase(
            name: "UDP saw its 1, no 0 yet: 124 naming udp",
            udp: [.send, .report(.relay(.activated)), .waitForCancel, .finish],
            exitCode: 124,
            adapter: .udp
        ),
        StopCase(
            name: "UDP still resolving, nothing sent: 69",
            udp: [.doing("resolving gate.local"), .waitForCancel, .finish],
            exitCode: 69,
            adapter: nil
        ),
    ]

    @Test("A stopped opening says 124 once a trigger left, 69 only when none did", arguments: cases)
    func stoppedOpening(_ test: StopCase) async throws {
        let bench = try PipelineBench()
        let udp = ScriptedAdapter(.udp, script: test.udp)
        let mqtt = ScriptedAdapter(
            .mqtt,
            script: [.send, .report(.relay(.activated)), .report(.relay(.released)), .finish]
        )
        let pipeline = bench.pipeline(udp, mqtt)
        let opening = Task {
            await pipeline.open(config: PipelineBench.config(), request: OpeningRequest(source: "test"))
        }
        #expect(await eventually { udp.attempts.first?.isWaiting == true }, "the UDP attempt never reached its wait")
        opening.cancel()
        let result = await opening.value

        #expect(result.exitCode == test.exitCode, "\(result.message)\n\(result.summaries)")
        #expect(result.adapter == test.adapter)
        #expect(mqtt.triggersSent == 0, "a stopped opening fell back")
        #expect(result.attempts.map(\.adapter) == [.udp], "\(result.summaries)")
        #expect(result.attempts.first?.reason == .stopped)
        if test.exitCode == 124 {
            #expect(result.message.contains("may have cycled"), "\(result.message)")
        }
    }
}

/// Evidence on every path (docs/CONTRACT.md#evidence-and-time, issue 28 item 6): a fallback
/// after a silent UDP attempt only when the status watch was live before its trigger left
/// and is the same watch still.
@Suite("OpeningPipeline: silence counts only while watched")
struct OpeningPipelineWatchTests {
    enum Watch: String, CaseIterable, CustomTestStringConvertible {
        /// Live (session 1) from before the trigger to the deadline: MQTT may go.
        case heldThroughout
        /// No subscription when the trigger left.
        case notLiveAtSend
        /// Live at the send, then lost and made again before the deadline.
        case brokeAfterSend
        var testDescription: String { rawValue }
    }

    @Test("A silent UDP attempt falls back only under a watch that held", arguments: Watch.allCases)
    func fallbackNeedsAWatchThatHeld(_ watch: Watch) async throws {
        let feed = FakeStatusFeed()
        if watch == .notLiveAtSend { feed.setLiveSession(nil) }
        let bench = try PipelineBench(feed: feed)
        let udp = ScriptedAdapter(.udp, script: [.send, .waitForCancel, .finish])
        let mqtt = ScriptedAdapter(
            .mqtt,
            script: [.send, .report(.relay(.activated)), .report(.relay(.released)), .finish]
        )
        let opening = Task { await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config()) }
        #expect(await eventually { udp.attempts.first?.isWaiting == true }, "the UDP attempt never started")
        if watch == .brokeAfterSend { feed.setLiveSession(2) }
        bench.clock.advance(to: try #require(udp.attempts.first).deadline + .seconds(1))
        let result = await opening.value

        #expect(udp.triggersSent == 1)
        switch watch {
        case .heldThroughout:
            #expect(mqtt.triggersSent == 1, "\(result.summaries)")
            #expect(result.exitCode == 0, "\(result.message)")
        case .notLiveAtSend, .brokeAfterSend:
            #expect(mqtt.triggersSent == 0, "fell back after unwatched silence: \(result.summaries)")
            #expect(result.exitCode == 124, "\(result.message)")
            #expect(result.adapter == .udp)
        }
    }
}

/// Arrival time counts, not reading time, on the watch too (docs/CONTRACT.md#evidence-and-time;
/// the fault explorer's seed 35): a daemon paused through its UDP attempt resumed, judged
/// the silence and fell back to MQTT while the `1` and `0` of its own cycle still waited
/// unread in its link's socket. Silence is judged only once the watch has caught up.
@Suite("OpeningPipeline: silence is judged after the watch caught up")
struct OpeningPipelineSyncTests {
    @Test("Status messages that waited unread when the UDP deadline passed still forbid the fallback")
    func unreadStatusForbidsTheFallback() async throws {
        let feed = FakeStatusFeed()
        let bench = try PipelineBench(feed: feed)
        let udp = ScriptedAdapter(.udp, script: [.send, .waitForCancel, .finish])
        let mqtt = ScriptedAdapter(
            .mqtt,
            script: [.send, .report(.relay(.activated)), .report(.relay(.released)), .finish]
        )
        let opening = Task { await bench.open(bench.pipeline(udp, mqtt), config: PipelineBench.config()) }
        #expect(await eventually { udp.attempts.first?.isWaiting == true }, "the UDP attempt never started")
        feed.holdBack([.activated, .released])
        bench.clock.advance(to: try #require(udp.attempts.first).deadline + .seconds(1))
        let result = await opening.value

        #expect(mqtt.triggersSent == 0, "fell back with the cycle's own status unread: \(result.summaries)")
        #expect(result.exitCode == 124, "\(result.message)")
        #expect(result.adapter == .udp)
    }
}
