import GateCore
import GateV2
import Logging
import Plumbing

/// The I/O of one protocol v2 opening, in the order `V2OpeningMachine` asks for it
/// (docs/CONTRACT.md#protocol-v2-openings). It decides nothing: every input goes to the
/// machine with its arrival time, every action is carried out as it comes.
struct V2OpeningRun {
    let pipeline: OpeningPipeline
    let config: GateConfig
    let request: OpeningRequest
    let plan: AdapterPlan
    let exchange: V2Exchange
    /// The MQTT link made for this configuration (the daemon's, or the opening's own).
    let link: MQTTLink?
    let recorder: OpeningRecorder
    let logger: Logger

    typealias Inputs = AsyncStream<OpeningInput>.Continuation

    /// Where the loop is: an attempt, a status query (its number), or neither.
    enum Step {
        case none
        case query(Int, cancel: @Sendable () -> Void)
        case attempt(RunningAttempt)
    }

    func run(
        epoch: UInt32?,
        onStateChange: (GateState, AdapterKind?) -> Void,
        onAttempt: (AdapterKind) -> Void
    ) async -> (result: OpeningResult, resetAfter: Duration?) {
        let clock = pipeline.clock
        let openingStart = clock.now()
        let recorder = self.recorder
        let permit = TriggerPermit(
            clock: clock,
            openerGone: request.openerGone,
            plainStatusIsEvidence: false,
            stamp: { at in recorder.recordTrigger(at: at) }
        )
        let (inputs, continuation) = AsyncStream.makeStream(of: OpeningInput.self, bufferingPolicy: .unbounded)
        defer { continuation.finish() }
        // The plain status topic is only counted: the daemon then knows its own echoes. The
        // attachment also makes the link carry this opening's MQTT copy (`MQTTLink.attempt`).
        let feed: (any StatusFeed)? = pipeline.statusFeed ?? link
        let detach = feed.map { feed in feed.attach { report, echo in _ = permit.observe(report, echo: echo) } }
        defer { detach?.detach(owing: permit.echoesOwed) }
        let exchange = self.exchange
        let detachReplies = link?.attachReplies { payload in
            if let input = exchange.input(forPayload: payload, at: clock.now()) { continuation.yield(input) }
        }
        defer { detachReplies?() }
        for skipped in plan.skipped {
            logger.info(
                "adapter skipped",
                metadata: ["adapter": "\(skipped.adapter)", "reason": "\(skipped.reason?.description ?? "")"]
            )
        }
        var machine = V2OpeningMachine(
            plan: plan.adapters,
            skipped: plan.skipped,
            resetDelay: .seconds(fromConfig: config.runtime.resetDelay),
            forced: plan.forced
        )
        var loop = Loop(run: self, permit: permit, inputs: continuation)
        var pending = machine.handle(.start(epoch: epoch, at: clock.now()))
        var iterator = inputs.makeAsyncIterator()
        while true {
            while !pending.isEmpty {
                let action = pending.removeFirst()
                if let finished = loop.perform(action, machine: &machine, pending: &pending, onStateChange, onAttempt) {
                    return finished
                }
            }
            guard let input = await iterator.next() else {
                // Cancelled (the daemon stopping): the permit closes first; what left decides.
                pending = machine.handle(.stopped(frameSent: loop.stop(), at: clock.now()))
                if pending.isEmpty {
                    return pipeline.undecided(
                        attempts: machine.attempts,
                        since: openingStart,
                        config: config,
                        logger: logger
                    )
                }
                continue
            }
            pending = await loop.feed(input, machine: &machine)
        }
    }

    /// The loop's own state: the step that runs, and the numbers that tell late inputs of
    /// an earlier step from the running one's.
    struct Loop {
        let run: V2OpeningRun
        let permit: TriggerPermit
        let inputs: Inputs
        var step = Step.none
        var attempts = 0
        var queries = 0
        /// Attempts whose silence waited once for the link to catch up.
        var synced: Set<Int> = []

        var logger: Logger { run.logger }
        var clock: any OpeningClock { run.pipeline.clock }

        /// Carries out one action; the result once the opening is decided.
        mutating func perform(
            _ action: V2OpeningMachine.Action,
            machine: inout V2OpeningMachine,
            pending: inout [V2OpeningMachine.Action],
            _ onStateChange: (GateState, AdapterKind?) -> Void,
            _ onAttempt: (AdapterKind) -> Void
        ) -> (result: OpeningResult, resetAfter: Duration?)? {
            switch action {
            case .queryEpoch(let kind, let deadline):
                endStep()
                queries += 1
                logger.info("asking the ESP32's epoch", metadata: ["adapter": "\(kind)"])
                step = .query(queries, cancel: startQuery(kind, number: queries, deadline: deadline))
            case .startAdapter(let kind, let frame, let deadline):
                if case .new(let epoch) = frame, let why = buildFrame(epoch: epoch) {
                    pending = machine.handle(.frameUnavailable(why, at: clock.now()))
                    return nil
                }
                startAttempt(kind, deadline: deadline)
                onAttempt(kind)
            case .stopAdapter(let kind):
                endStep()
                if let record = machine.attempts.last(where: { $0.adapter == kind }) {
                    logger.info("adapter finished", metadata: OpeningPipeline.metadata(finished: record))
                }
            case .stateChanged(let state, let adapter):
                logger.info(
                    "state changed",
                    metadata: ["state": "\(state.rawValue)", "adapter": "\(adapter?.rawValue ?? "none")"]
                )
                run.recorder.stateChanged(state, adapter: adapter)
                onStateChange(state, adapter)
            case .finished(let result, let resetAt):
                endStep()
                return (result, resetAt.map { $0.duration(since: clock.now()) })
            }
            return nil
        }

        /// Draws the counter under the opening lock and builds the frame; why not, in words.
        func buildFrame(epoch: UInt32) -> String? {
            let keyID = run.exchange.key.id
            let drawn = V2Counters.shared.next(
                stateDirectory: run.pipeline.paths.stateDirectory,
                keyID: keyID,
                holding: run.recorder.lock
            )
            switch drawn {
            case .success(let counter):
                let frame = run.exchange.key.open(epoch: epoch, counter: counter)
                run.exchange.expect(frame: frame)
                logger.info(
                    "frame built",
                    metadata: ["key_id": "\(keyID)", "counter": "\(counter)", "epoch": "\(String(epoch, radix: 16))"]
                )
                return nil
            case .failure(let error):
                logger.error("no protocol v2 counter", metadata: ["error": "\(error)"])
                return error.description
            }
        }

        mutating func startAttempt(_ kind: AdapterKind, deadline: MonotonicInstant) {
            guard let frame = run.exchange.frame else { return }
            endStep()
            attempts += 1
            logger.info("trying adapter", metadata: ["adapter": "\(kind)", "counter": "\(frame.counter)"])
            permit.begin(attempt: attempts, deadline: deadline)
            let ticket = AttemptTicket(deadline: deadline, attempt: attempts, permit: permit, inputs: inputs)
            let adapter = run.pipeline.adapters.makeV2(
                kind,
                config: run.config,
                selection: run.request.selection,
                frame: frame,
                key: run.exchange.key,
                logger: logger,
                watch: run.link
            )
            let cancel = adapter.attempt(ticket)
            let timer = OpeningPipeline.overdueTimer(
                attempt: attempts,
                deadline: deadline,
                permit: permit,
                inputs: inputs,
                clock: clock
            )
            step = .attempt(
                RunningAttempt(number: attempts, kind: kind, ticket: ticket, cancel: cancel, stopTimer: timer.cancel)
            )
        }

        /// Ends whatever step runs: its permit closed, its adapter or query cancelled.
        mutating func endStep() {
            switch step {
            case .none: break
            case .query(_, let cancel): cancel()
            case .attempt(let running):
                running.end(permit: permit)
            }
            step = .none
        }

        /// Stopped from outside: nothing more leaves; whether the running attempt's copy did.
        mutating func stop() -> Bool {
            guard case .attempt(let running) = step else { return false }
            let sent = permit.close(attempt: running.number)
            logger.warning("opening stopped from outside", metadata: ["trigger_sent": "\(sent)"])
            return sent
        }
    }
}

extension V2OpeningRun.Loop {
    /// One input for the machine, when it is for the step that runs; late inputs of an
    /// earlier step are dropped.
    mutating func feed(_ input: OpeningInput, machine: inout V2OpeningMachine) async -> [V2OpeningMachine.Action] {
        switch input {
        case .adapter(let number, let event, let at):
            guard case .attempt(let running) = step, running.number == number else { return [] }
            logger.trace("adapter event", metadata: ["adapter": "\(running.kind)", "event": "\(event)"])
            if case .deadlineReached = event, running.kind == .mqtt, let link = run.link, !synced.contains(number) {
                // Replies the broker sent before now are read before the silence counts (a
                // paused process: both wait unread in the link's socket).
                synced.insert(number)
                _ = await link.sync(timeout: OpeningPipeline.syncLimit)
                inputs.yield(input)
                return []
            }
            return machine.handle(.adapter(running.kind, event, at: at))
        case .signed(let kind, let epoch, let at):
            guard case .attempt(let running) = step else { return [] }
            logger.debug("signed reply on the MQTT link", metadata: ["reply": "\(kind)"])
            let sent = running.sentFirst(permit: permit) { machine.handle(.adapter(running.kind, .sent, at: at)) }
            return sent + machine.handle(.adapter(running.kind, .signed(kind, epoch: epoch), at: at))
        case .epoch(let number, let result, let at):
            guard case .query(let current, _) = step, current == number else { return [] }
            switch result {
            case .success(let epoch):
                logger.info("epoch learnt", metadata: ["epoch": "\(String(epoch, radix: 16))"])
                return machine.handle(.epochLearnt(epoch, at: at))
            case .failure(let why):
                logger.info("epoch not learnt", metadata: ["reason": "\(why)"])
                return machine.handle(.epochUnknown(why.description, at: at))
            }
        case .ended(let number):
            guard case .attempt(let running) = step, running.number == number else { return [] }
            running.endedSilently(permit: permit, inputs: inputs, clock: clock)
            return []
        case .overdue(let number, let stage):
            guard case .attempt(let running) = step, running.number == number else { return [] }
            running.overdue(stage: stage, permit: permit, inputs: inputs, clock: clock, logger: logger)
            return []
        case .observed:
            // Never yielded under v2: the permit only counts plain status messages.
            return []
        }
    }

    /// Starts one signed status query (which never moves the relay); its answer or its
    /// failure comes back as `.epoch(query: number, …)`. Returns how to cancel it.
    func startQuery(_ kind: AdapterKind, number: Int, deadline: MonotonicInstant) -> @Sendable () -> Void {
        let inputs = self.inputs
        let clock = self.clock
        let key = run.exchange.key
        let logger = self.logger
        let budget = deadline.duration(since: clock.now())
        let fail: @Sendable (String) -> Void = { why in
            inputs.yield(.epoch(query: number, .failure(.unreachable(why)), at: clock.now()))
        }
        switch kind {
        case .udp:
            guard let udp = run.config.udp else {
                fail("no [udp] table in the configuration")
                return {}
            }
            let failure = OSThread.detach {
                let result: Result<UInt32, V2StatusQuery.Failure>
                switch HostResolver.resolve(host: udp.host, port: udp.port) {
                case .success(let target):
                    let query = V2StatusQuery(target: target, key: key, logger: logger)
                    result = query.run(budget: budget).map(\.status.epoch)
                case .failure(let failure):
                    result = .failure(.unreachable(failure.message))
                }
                inputs.yield(.epoch(query: number, result, at: clock.now()))
            }
            if let failure { fail("cannot start the status query: \(SystemError("pthread_create", code: failure))") }
            return {}
        case .mqtt:
            return startMQTTQuery(number: number, deadline: deadline, budget: budget, fail: fail)
        }
    }

    /// The status query through the MQTT link: published on `<trigger_topic>/v2`, its
    /// answer read by the link's reply reader (`V2Exchange`).
    private func startMQTTQuery(
        number: Int,
        deadline: MonotonicInstant,
        budget: Duration,
        fail: @escaping @Sendable (String) -> Void
    ) -> @Sendable () -> Void {
        guard let link = run.link, let v2 = V2Subscription(config: run.config), link.isReady else {
            fail("the MQTT link is not up (connected and subscribed); nothing was published")
            return {}
        }
        let counter: UInt64
        switch SystemRandom.nonZero64() {
        case .success(let drawn): counter = drawn
        case .failure(let error):
            fail("cannot draw the query's counter: \(error)")
            return {}
        }
        let exchange = run.exchange
        let query = exchange.key.statusQuery(counter: counter)
        exchange.expect(query: query, number: number)
        guard link.publishRequest(topic: v2.requests, payload: Array(query.hex.utf8)) else {
            exchange.endQuery()
            fail("cannot publish the status query on \(v2.requests)")
            return {}
        }
        let inputs = self.inputs
        let clock = self.clock
        let timer = Task {
            do { try await clock.sleep(until: deadline) } catch { return }
            inputs.yield(.epoch(query: number, .failure(.silent(ignored: 0, budget: budget)), at: clock.now()))
        }
        return {
            timer.cancel()
            exchange.endQuery()
        }
    }
}
