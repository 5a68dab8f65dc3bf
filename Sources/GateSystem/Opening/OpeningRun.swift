import GateCore
import Logging

/// The I/O of one protocol v1 opening, in the order `OpeningMachine` asks for it. It
/// decides nothing: every input goes to the machine with its arrival time, every action
/// is carried out as it comes (v2's is `V2OpeningRun`).
struct OpeningRun {
    let pipeline: OpeningPipeline
    let config: GateConfig
    let selection: AdapterSelection
    let openerGone: (@Sendable () -> Bool)?
    let plan: AdapterPlan
    let udpLink: LinkVerdict?
    /// The status topic: the daemon's link, or the opening's own watch.
    let feed: (any StatusFeed)?
    let watch: MQTTLink?
    let recorder: OpeningRecorder
    let logger: Logger

    typealias Inputs = AsyncStream<OpeningInput>.Continuation

    func run(
        onStateChange: (GateState, AdapterKind?) -> Void,
        onAttempt: (AdapterKind) -> Void
    ) async -> (result: OpeningResult, resetAfter: Duration?) {
        let clock = pipeline.clock
        let openingStart = clock.now()
        let recorder = self.recorder
        let feed = self.feed
        let permit = TriggerPermit(
            relayActive: feed?.relayActive ?? false,
            clock: clock,
            watchSession: { feed?.liveSession },
            openerGone: openerGone,
            stamp: { at in recorder.recordTrigger(at: at) }
        )
        let (inputs, continuation) = AsyncStream.makeStream(of: OpeningInput.self, bufferingPolicy: .unbounded)
        defer { continuation.finish() }
        let detach = feed?.attach { report, echo in
            let at = clock.now()
            if permit.observe(report, echo: echo) { continuation.yield(.observed(report, at: at)) }
        }
        defer { detach?.detach(owing: permit.echoesOwed) }
        logPlan()
        var machine = plan.machine(resetDelay: .seconds(fromConfig: config.runtime.resetDelay))
        var loop = Loop(run: self, permit: permit, inputs: continuation)
        var pending = machine.handle(.start(at: openingStart))
        var iterator = inputs.makeAsyncIterator()
        while true {
            while !pending.isEmpty {
                let action = pending.removeFirst()
                if let finished = loop.perform(action, machine: machine, onStateChange, onAttempt) {
                    return finished
                }
            }
            guard let running = loop.running else {
                return pipeline.undecided(
                    attempts: machine.attempts,
                    since: openingStart,
                    config: config,
                    logger: logger
                )
            }
            guard let input = await iterator.next() else {
                // Cancelled (the daemon stopping): the permit closes first, so nothing more
                // leaves, and its record of what left decides the outcome.
                let sent = permit.close(attempt: running.number)
                logger.warning("opening stopped from outside", metadata: ["trigger_sent": "\(sent)"])
                pending = machine.handle(.stopped(triggerSent: sent, at: clock.now()))
                if pending.isEmpty { loop.running = nil }
                continue
            }
            pending = await loop.feed(input, to: &machine, running: running)
        }
    }

    /// The plan in the log: the on-link verdict, and each adapter left out and why.
    func logPlan() {
        if let udp = config.udp, let udpLink {
            logger.debug(
                "on-link check",
                metadata: ["adapter": "udp", "target": "\(udp.host)", "verdict": "\(udpLink)"]
            )
            if selection == .udp, udpLink == .offLink {
                logger.info(
                    "UDP forced although the ESP32 is not on a directly connected network",
                    metadata: ["target": "\(udp.host)"]
                )
            }
        }
        for skipped in plan.skipped {
            logger.info(
                "adapter skipped",
                metadata: ["adapter": "\(skipped.adapter)", "reason": "\(skipped.reason?.description ?? "")"]
            )
        }
    }

    /// The loop's own state: the attempt that runs, the number that tells its late inputs
    /// from an earlier attempt's, and the attempts whose silence waited for the watch.
    struct Loop {
        let run: OpeningRun
        let permit: TriggerPermit
        let inputs: Inputs
        var running: RunningAttempt?
        var attempts = 0
        var synced: Set<Int> = []

        init(run: OpeningRun, permit: TriggerPermit, inputs: Inputs) {
            self.run = run
            self.permit = permit
            self.inputs = inputs
        }

        var logger: Logger { run.logger }
        var clock: any OpeningClock { run.pipeline.clock }

        /// Carries out one action; the result once the opening is decided.
        mutating func perform(
            _ action: OpeningMachine.Action,
            machine: OpeningMachine,
            _ onStateChange: (GateState, AdapterKind?) -> Void,
            _ onAttempt: (AdapterKind) -> Void
        ) -> (result: OpeningResult, resetAfter: Duration?)? {
            switch action {
            case .startAdapter(let kind, let deadline):
                startAttempt(kind, deadline: deadline)
                onAttempt(kind)
            case .stopAdapter(let kind):
                if let running, running.kind == kind {
                    running.end(permit: permit)
                    self.running = nil
                }
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
                running?.end(permit: permit)
                return (result, resetAt.map { $0.duration(since: clock.now()) })
            }
            return nil
        }

        mutating func startAttempt(_ kind: AdapterKind, deadline: MonotonicInstant) {
            attempts += 1
            logger.info("trying adapter", metadata: ["adapter": "\(kind)"])
            permit.begin(attempt: attempts, deadline: deadline)
            let ticket = AttemptTicket(deadline: deadline, attempt: attempts, permit: permit, inputs: inputs)
            let adapter = run.pipeline.adapters.make(
                kind,
                config: run.config,
                selection: run.selection,
                logger: logger,
                watch: run.watch
            )
            let cancel = adapter.attempt(ticket)
            let timer = OpeningPipeline.overdueTimer(
                attempt: attempts,
                deadline: deadline,
                permit: permit,
                inputs: inputs,
                clock: clock
            )
            running = RunningAttempt(
                number: attempts,
                kind: kind,
                ticket: ticket,
                cancel: cancel,
                stopTimer: timer.cancel
            )
        }
    }
}

extension OpeningRun.Loop {
    /// One input for the machine, when it is for the attempt that runs; late inputs of an
    /// earlier attempt are dropped.
    mutating func feed(
        _ input: OpeningInput,
        to machine: inout OpeningMachine,
        running: RunningAttempt
    ) async -> [OpeningMachine.Action] {
        switch input {
        case .adapter(let number, let event, let at):
            guard number == running.number else { return [] }
            logger.trace("adapter event", metadata: ["adapter": "\(running.kind)", "event": "\(event)"])
            switch OpeningPipeline.silence(event, attempt: number, permit: permit) {
            case .watched where run.feed != nil && !synced.contains(number):
                // What the watch's broker sent before now is read first; the silence
                // comes again after it (a paused process: both wait unread).
                synced.insert(number)
                if await run.feed?.sync(timeout: OpeningPipeline.syncLimit) != true { _ = machine.handle(.unwatched) }
                inputs.yield(input)
                return []
            case .unwatched:
                _ = machine.handle(.unwatched)
            case .watched, .notSilence:
                break
            }
            return machine.handle(.adapter(running.kind, event, at: at))
        case .observed(let report, let at):
            logger.debug("status topic", metadata: ["report": "\(report)", "during": "\(running.kind)"])
            let sent = running.sentFirst(permit: permit) { machine.handle(.adapter(running.kind, .sent, at: at)) }
            return sent + machine.handle(.observed(report, at: at))
        case .signed, .epoch:
            // Protocol v2's (`V2OpeningRun`); a v1 opening never asks for them.
            return []
        case .ended(let number):
            guard number == running.number else { return [] }
            running.endedSilently(permit: permit, inputs: inputs, clock: clock)
            return []
        case .overdue(let number, let stage):
            guard number == running.number else { return [] }
            running.overdue(stage: stage, permit: permit, inputs: inputs, clock: clock, logger: logger)
            return []
        }
    }
}
