#if canImport(Glibc)
import Glibc
#endif
import GateCore
import Logging
import Mosquitto
import Synchronization
import Threading

/// The MQTT exchange of a `gate open` that tries MQTT first, begun before the
/// opening is ready to send.
///
/// Why: the broker wants two round trips (CONNACK, then SUBACK: SPEC §1) before the
/// trigger may go, and a TLS broker a handshake and libmosquitto, whose loading with
/// libssl and libcrypto keeps the dynamic loader busy for over a millisecond. Begun
/// on a thread of its own, on another core, as soon as the command line asks for
/// MQTT, and handed its broker as soon as the configuration is read, all of that
/// overlaps taking the lock and writing the status.
///
/// Nothing is loaded before the broker is known: a plain-TCP broker needs no
/// library (`PlainMQTTClient`), and loading one anyway slowed the main thread (glibc
/// lets no thread start during a `dlopen`, and the two CPUs shoot down each
/// other's TLB entries while the loader maps).
///
/// What is not done early is the trigger: it is published only when the opening
/// machine starts the MQTT adapter (`attempt(config:deadline:)`), so after the lock
/// was taken and the cooldown checked, at most once, on the exchange's own thread.
/// An exchange nobody claims publishes nothing and ends at `abandon()`, or after
/// `holdLimit`.
public final class EarlyMQTTExchange: Sendable {
    enum Handoff: Sendable {
        case waiting
        case connect(MQTTConfig, CredentialLookup, Logger)
        case abandoned
    }

    private let handoff = Mutex(Handoff.waiting)
    private let handedOver: WakeSignal
    /// Ends the exchange: abandoned, or the opening stopped listening.
    private let cancel: WakeSignal
    private let release: TriggerRelease
    private let claimed = Mutex(false)
    private let events: AsyncStream<AdapterEvent>
    private let continuation: AsyncStream<AdapterEvent>.Continuation

    /// How long the exchange waits for its broker, and then for the opening to claim it.
    public static let holdLimit = Duration.seconds(10)

    /// Starts the thread that waits for `connect`; nil
    /// when it cannot start (the adapter then connects when asked, as usual).
    ///
    /// The thread starts on another core than the caller's (`OSThread.detach(elsewhere:)`):
    /// left to the scheduler, it often waited behind the caller, and the load then
    /// came after the caller's work instead of beside it.
    public static func begin() -> EarlyMQTTExchange? {
        guard let early = try? EarlyMQTTExchange() else { return nil }
        if OSThread.detach(elsewhere: true, { early.runThread() }) != nil {
            return nil
        }
        return early
    }

    private init() throws(WakeSignalError) {
        handedOver = try WakeSignal()
        cancel = try WakeSignal()
        release = TriggerRelease(heldUntil: MonotonicClock.now() + Self.holdLimit, signal: try WakeSignal())
        (events, continuation) = AsyncStream.makeStream(of: AdapterEvent.self, bufferingPolicy: .unbounded)
        continuation.onTermination = { [cancel] _ in cancel.signal() }
    }

    /// The broker to connect to and subscribe at, as soon as the library is loaded.
    /// Only the first handoff counts.
    public func connect(config: MQTTConfig, credentials: CredentialLookup, logger: Logger) {
        handoff.withLock { handoff in
            if case .waiting = handoff { handoff = .connect(config, credentials, logger) }
        }
        handedOver.signal()
    }

    /// Nothing will be sent through this exchange: its thread ends, disconnecting if
    /// it had connected. Does nothing to an exchange the opening has claimed.
    public func abandon() {
        guard !claimed.withLock({ $0 }) else { return }
        handoff.withLock { handoff in
            if case .waiting = handoff { handoff = .abandoned }
        }
        cancel.signal()
    }

    /// The opening's MQTT attempt through this exchange: the trigger is released and
    /// the attempt's budget starts now. Nil when the exchange was handed another
    /// broker or none, or was claimed before; the caller then connects afresh.
    public func attempt(config: MQTTConfig, deadline: MonotonicInstant) -> AdapterAttempt? {
        let handedConfig = handoff.withLock { handoff -> MQTTConfig? in
            if case .connect(let handed, _, _) = handoff { return handed }
            return nil
        }
        guard handedConfig == config else { return nil }
        let first = claimed.withLock { claimed -> Bool in
            defer { claimed = true }
            return !claimed
        }
        guard first else { return nil }
        release.release(deadline: deadline)
        return AdapterAttempt(events: events, cancel: { [cancel] in cancel.signal() })
    }

    private func runThread() {
        defer { continuation.finish() }
        var fds = [
            pollfd(fd: handedOver.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: cancel.fd, events: Int16(POLLIN), revents: 0),
        ]
        let waitMs = Int32(clamping: Self.holdLimit.milliseconds)
        while true {
            switch handoff.withLock({ $0 }) {
            case .waiting:
                let ready = poll(&fds, 2, waitMs)
                if ready == 0 || fds[1].revents != 0 { return }
            case .abandoned:
                return
            case .connect(let config, let credentials, let logger):
                MQTTExchange(config: config, credentials: credentials, logger: logger, continuation: continuation, release: release)
                    .run(wake: cancel)
                return
            }
        }
    }
}

/// When an `MQTTExchange` may publish its trigger, and when its attempt ends.
final class TriggerRelease: Sendable {
    private let gate: Mutex<(deadline: MonotonicInstant, released: Bool)>
    /// Readable once released: wakes an exchange that waits, subscribed, for the release.
    let signal: WakeSignal?

    /// Released from the start, for a connection the adapter makes when asked.
    init(deadline: MonotonicInstant) {
        gate = Mutex((deadline, true))
        signal = nil
    }

    /// Held until `release(deadline:)`; unreleased, the exchange ends at `heldUntil`.
    init(heldUntil: MonotonicInstant, signal: WakeSignal) {
        gate = Mutex((heldUntil, false))
        self.signal = signal
    }

    func state() -> (deadline: MonotonicInstant, released: Bool) {
        gate.withLock { $0 }
    }

    /// Lets the trigger go; the attempt must be over by `deadline`.
    func release(deadline: MonotonicInstant) {
        gate.withLock { $0 = (deadline, true) }
        signal?.signal()
    }
}

/// MQTT through the early exchange when it was begun for this broker; otherwise a
/// connection of its own.
struct EarlyMQTTAdapter: GateAdapter {
    let kind = AdapterKind.mqtt
    let early: EarlyMQTTExchange
    let cold: MQTTAdapter

    func attempt(deadline: MonotonicInstant) -> AdapterAttempt {
        early.attempt(config: cold.config, deadline: deadline) ?? cold.attempt(deadline: deadline)
    }
}
