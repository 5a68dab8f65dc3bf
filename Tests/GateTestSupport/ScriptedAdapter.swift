import GateCore
import GateSystem
import Synchronization

/// A `GateAdapter` that plays a script on each attempt's ticket, for driving
/// `OpeningPipeline` without a network: send through the permit, report events, observe
/// status reports, wait for the test, finish. It records what each attempt did, above
/// all how many triggers really went through the permit.
///
///     let udp = ScriptedAdapter(.udp, script: [.send, .report(.relay(.activated)), .report(.relay(.released)), .finish])
///     let pipeline = OpeningPipeline(..., adapters: AdapterFactory(custom: ScriptedAdapter.factory(udp, mqtt)), ...)
///
/// Steps run in order. Those before the first waiting step (`.wait`, `.waitForCancel`) run
/// inside `attempt(_:)` itself, before the pipeline reads any of their events: what an
/// adapter's thread that raced ahead would have done, and deterministic. The rest run on
/// a task of their own. A script that does not end with `.finish` leaves the attempt
/// running until the pipeline gives up on it (at its deadline, on the opening's clock).
public final class ScriptedAdapter: GateAdapter {
    public enum Step: Sendable {
        /// `ticket.doing(words)`: what the attempt does now, for the words of a spent budget.
        case doing(String)
        /// `ticket.send {}`: the trigger, if the permit lets it go.
        case send
        /// `ticket.send { body() }`: `body` runs where a real adapter writes to its socket,
        /// inside the permit (after the trigger's stamp). It must not touch the ticket.
        case sendRunning(@Sendable () -> Void)
        /// `ticket.report(event)`, stamped with the opening clock's `now()`.
        case report(AdapterEvent)
        /// `ticket.observe(report)`: a status message from the attempt's own subscription.
        case observe(RelayObserver.Report)
        /// Any code, given the ticket.
        case run(@Sendable (AttemptTicket) -> Void)
        /// Waits until the test opens the latch.
        case wait(ScriptLatch)
        /// Waits until the pipeline cancels the attempt (it asks an attempt to drain and
        /// finish after its deadline, or when the opening is decided).
        case waitForCancel
        /// `ticket.finish()`: the attempt is over.
        case finish
    }

    /// What one attempt did.
    public struct Attempt: Sendable {
        public let deadline: MonotonicInstant
        /// The result of each send step, in order: true when the trigger went through.
        public var sends: [Bool] = []
        /// Steps done so far.
        public var stepsDone = 0
        public var cancelled = false
        public var finished = false
        /// The script waits now, at a `.wait` or `.waitForCancel` step.
        public var isWaiting = false

        public var triggersSent: Int { sends.filter { $0 }.count }
    }

    public let kind: AdapterKind
    private let scripts: [[Step]]
    private let record = Mutex<[Attempt]>([])

    /// - Parameter scripts: one script per attempt, in order; attempts past the last script
    ///   play the last one again.
    public init(_ kind: AdapterKind, scripts: [[Step]]) {
        precondition(!scripts.isEmpty, "a scripted adapter needs a script")
        self.kind = kind
        self.scripts = scripts
    }

    /// The same script for every attempt.
    public convenience init(_ kind: AdapterKind, script: [Step]) {
        self.init(kind, scripts: [script])
    }

    /// Every attempt so far, in order.
    public var attempts: [Attempt] { record.withLock { $0 } }

    /// Triggers that went through the permit, over every attempt.
    public var triggersSent: Int { attempts.reduce(0) { $0 + $1.triggersSent } }

    /// Send steps that the permit refused.
    public var sendsWithheld: Int { attempts.reduce(0) { $0 + $1.sends.filter { !$0 }.count } }

    /// An `AdapterFactory(custom:)` body that hands out these adapters by kind (a kind
    /// without one reports `misconfigured`, so a test notices).
    public static func factory(_ adapters: ScriptedAdapter...) -> @Sendable (AdapterKind) -> any GateAdapter {
        factory(adapters)
    }

    /// The same, for scripted and real adapters mixed (a `UDPAdapter` on a loopback socket
    /// beside a scripted MQTT, say).
    public static func factory(_ adapters: [any GateAdapter]) -> @Sendable (AdapterKind) -> any GateAdapter {
        let byKind = Dictionary(adapters.map { ($0.kind, $0) }, uniquingKeysWith: { first, _ in first })
        return { kind in
            byKind[kind]
                ?? ScriptedAdapter(kind, script: [.report(.misconfigured("no scripted \(kind) adapter")), .finish])
        }
    }

    public func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        let index = record.withLock { attempts in
            attempts.append(Attempt(deadline: ticket.deadline))
            return attempts.count - 1
        }
        let script = scripts[min(index, scripts.count - 1)]
        let cancelled = ScriptLatch()
        let inline = script.prefix { !$0.waits }
        for step in inline {
            playAtOnce(step, ticket: ticket, attempt: index)
            record.withLock { $0[index].stepsDone += 1 }
        }
        let rest = script.dropFirst(inline.count)
        if !rest.isEmpty {
            Task.detached { [self] in
                for step in rest {
                    switch step {
                    case .wait(let latch):
                        record.withLock { $0[index].isWaiting = true }
                        await latch.wait()
                        record.withLock { $0[index].isWaiting = false }
                    case .waitForCancel:
                        record.withLock { $0[index].isWaiting = true }
                        await cancelled.wait()
                        record.withLock { $0[index].isWaiting = false }
                    default:
                        playAtOnce(step, ticket: ticket, attempt: index)
                    }
                    record.withLock { $0[index].stepsDone += 1 }
                }
            }
        }
        return AttemptCancel { [self] in
            record.withLock { $0[index].cancelled = true }
            cancelled.open()
        }
    }

    /// Every step but the waiting ones.
    private func playAtOnce(_ step: Step, ticket: AttemptTicket, attempt index: Int) {
        switch step {
        case .doing(let words):
            ticket.doing(words)
        case .send:
            let sent = ticket.send {}
            record.withLock { $0[index].sends.append(sent) }
        case .sendRunning(let body):
            let sent = ticket.send { body() }
            record.withLock { $0[index].sends.append(sent) }
        case .report(let event):
            ticket.report(event)
        case .observe(let report):
            ticket.observe(report)
        case .run(let body):
            body(ticket)
        case .wait, .waitForCancel:
            preconditionFailure("waiting steps are played on the script's task")
        case .finish:
            record.withLock { $0[index].finished = true }
            ticket.finish()
        }
    }
}

extension ScriptedAdapter.Step {
    var waits: Bool {
        switch self {
        case .wait, .waitForCancel: true
        default: false
        }
    }

    /// Moves `clock` just past the attempt's deadline (`extra` after it): the time an
    /// adapter's thread spent resolving, connecting, or starved.
    public static func passDeadline(_ clock: ManualOpeningClock, by extra: Duration = .milliseconds(1)) -> Self {
        .run { ticket in clock.advance(to: ticket.deadline + extra) }
    }
}

/// A one-shot signal a script waits for and the test opens.
public final class ScriptLatch: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init() {}

    public var isOpen: Bool { state.withLock { $0.open } }

    /// Lets every waiter (and every later one) go on.
    public func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}
