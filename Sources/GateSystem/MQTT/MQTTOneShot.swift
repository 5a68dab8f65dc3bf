import GateCore
import Mosquitto
import Plumbing
import Synchronization

/// One short MQTT session outside the openings: connect, optionally subscribe to one
/// topic (for its SUBACK only), publish some messages with QoS 1 and wait for their
/// PUBACKs, disconnect. `gate doctor` (the login alone, then the Home Assistant command
/// topic's SUBACK) and `gate homeassistant remove` use it; it never publishes to the
/// ESP32's trigger topic.
///
/// The session runs on a thread of its own, bounded by `timeout` from the start:
/// libmosquitto's connect blocks (name, TCP, TLS handshake), and a broker that stops
/// answering in the middle of it must not hold the caller. Past the budget that thread
/// is left behind and the answer is `timedOut`.
public final class MQTTOneShot: Sendable {
    /// What the session reached: the CONNACK, and the subscription's verdict.
    public struct Outcome: Sendable, Equatable {
        /// From the start to the accepted CONNACK.
        public var connackAfter: Duration
        /// Whether the broker granted the subscription; nil when none was asked for.
        public var subscriptionGranted: Bool?
    }

    private struct Progress {
        var result: Result<Outcome, MQTTSessionFailure>?
        var connackAfter: Duration?
        var subscribeID: Int32?
        /// SUBACKs by message id: one may come before `subscribe` returned its id.
        var subacks: [Int32: Bool] = [:]
        var pending: Set<Int32> = []
        /// PUBACKs seen before their `publish` call returned.
        var early: Set<Int32> = []
        var published = false
        var lastError: String?
        /// Past libmosquitto's blocking connect: the thread will end (and disconnect) promptly.
        var pastConnect = false

        /// The subscription's verdict, once its SUBACK and its id are both known.
        var granted: Bool? { subscribeID.flatMap { subacks[$0] } }
    }

    private let mqtt: MQTTConfig
    private let started = MonotonicClock.now()
    private let progress = Mutex(Progress())
    /// For the session's thread: signalled at every step (the CONNACK, an acknowledgement).
    private let wake: WakeSignal
    /// For the caller: signalled once the outcome is known.
    private let settled: WakeSignal
    /// Signalled when the thread has let go of the client.
    private let finished: WakeSignal

    private init(_ mqtt: MQTTConfig) throws(WakeSignalError) {
        self.mqtt = mqtt
        wake = try WakeSignal()
        settled = try WakeSignal()
        finished = try WakeSignal()
    }

    private var broker: String { MQTTStatusTopic(config: mqtt).broker }

    /// Runs the session and waits for it, at most `timeout` (then briefly for its DISCONNECT).
    public static func run(
        _ mqtt: MQTTConfig,
        password: Secret?,
        subscribe: String? = nil,
        publish messages: [OutgoingMessage] = [],
        timeout: Duration
    ) -> Result<Outcome, MQTTSessionFailure> {
        let broker = MQTTStatusTopic(config: mqtt).broker
        let session: MQTTOneShot
        do {
            session = try MQTTOneShot(mqtt)
        } catch {
            return .failure(MQTTSessionFailure(.setup, SystemError("pipe", code: error.code).description, broker))
        }
        let thread = OSThread.detach {
            session.converse(password: password, subscribe: subscribe, messages: messages)
        }
        if let thread {
            return .failure(MQTTSessionFailure(.setup, SystemError("pthread_create", code: thread).description, broker))
        }
        let deadline = session.started + timeout
        if !session.wait(on: session.settled, until: deadline, for: { $0.result != nil }) {
            let connected = session.progress.withLock { $0.connackAfter != nil }
            session.fail(connected ? .unacknowledged(within: timeout) : .noConnack(within: timeout), "")
        }
        // Let the thread say goodbye (DISCONNECT), briefly; one still inside libmosquitto's
        // connect has nothing to say and is not waited for.
        if session.progress.withLock({ $0.pastConnect }) {
            _ = session.finished.wait(until: (MonotonicClock.now() + .milliseconds(500)).nanoseconds)
        }
        return session.progress.withLock { $0.result }
            ?? .failure(MQTTSessionFailure(.noConnack(within: timeout), "", broker))
    }

    /// The first outcome wins; later ones (a disconnect after a refusal) add nothing.
    private func settle(_ result: Result<Outcome, MQTTSessionFailure>) {
        progress.withLock { if $0.result == nil { $0.result = result } }
        settled.signal()
        wake.signal()
    }

    private func fail(_ kind: MQTTSessionFailure.Kind, _ detail: String) {
        settle(.failure(MQTTSessionFailure(kind, detail, broker)))
    }

    /// On the session's thread: connect, then (after the CONNACK) subscribe and publish.
    private func converse(password: Secret?, subscribe: String?, messages: [OutgoingMessage]) {
        defer { finished.signal() }
        let client: MosquittoClient
        do {
            client = try MQTTStatusTopic.makeClient(config: mqtt, password: password) { [self] event in handle(event) }
            try client.connect(host: mqtt.host, port: Int32(mqtt.port), keepAlive: 60)
            // Before the loop starts: its CONNACK can settle the outcome at once, and the
            // caller must then already know to wait for the DISCONNECT below.
            progress.withLock { $0.pastConnect = true }
            try client.startLoop()
        } catch let error as MosquittoError {
            let words = error.description + (progress.withLock { $0.lastError }.map { " (\($0))" } ?? "")
            fail(mqtt.tls && error.code == Self.tlsErrorCode ? .tls : .connect, words)
            return
        } catch {
            fail(.setup, "\(error)")
            return
        }
        defer {
            client.disconnect()
            client.stopLoop(force: false)
        }
        guard wait(on: wake, until: nil, for: { $0.connackAfter != nil || $0.result != nil }),
            progress.withLock({ $0.result == nil })
        else { return }
        do throws(MosquittoError) {
            if let subscribe {
                let id = try client.subscribe(topic: subscribe, qos: 1)
                progress.withLock { $0.subscribeID = id }
            }
            for message in messages {
                let id = try client.publish(
                    topic: message.topic,
                    payload: message.payload,
                    qos: 1,
                    retain: message.retain
                )
                // The PUBACK may have come before `publish` returned the id.
                progress.withLock { state in
                    if state.early.remove(id) == nil { state.pending.insert(id) }
                }
            }
        } catch {
            fail(.lost, error.description)
            return
        }
        progress.withLock { $0.published = true }
        let acknowledged = wait(on: wake, until: nil) { state in
            state.result != nil
                || state.published && state.pending.isEmpty && (subscribe == nil || state.granted != nil)
        }
        let outcome = progress.withLock { state in
            state.connackAfter.map { Outcome(connackAfter: $0, subscriptionGranted: state.granted) }
        }
        if acknowledged, let outcome { settle(.success(outcome)) }
    }

    /// MOSQ_ERR_TLS of mosquitto.h: the handshake failed inside `mosquitto_connect`.
    static let tlsErrorCode: Int32 = 8

    /// Waits on `signal` until `condition` holds, or `deadline` comes (none: forever; the
    /// session's thread waits for what ends with the outcome).
    private func wait(
        on signal: WakeSignal,
        until deadline: MonotonicInstant?,
        for condition: (Progress) -> Bool
    ) -> Bool {
        while true {
            if progress.withLock({ condition($0) }) { return true }
            if let deadline, MonotonicClock.now() >= deadline { return false }
            if signal.wait(until: deadline?.nanoseconds) { signal.clear() }
        }
    }

    /// On libmosquitto's thread (log lines also inside `connect`).
    private func handle(_ event: MosquittoEvent) {
        switch event {
        case .connected(let code) where code == 0:
            progress.withLock { $0.connackAfter = MonotonicClock.now().duration(since: started) }
        case .connected(let code):
            fail(.refused(code: code), MosquittoError.connackWords(for: code))
        case .subscribed(let id, let granted):
            progress.withLock { $0.subacks[id] = !MQTTStatusTopic.refused(granted: granted) }
        case .published(let id):
            progress.withLock { state in
                if state.pending.remove(id) == nil { state.early.insert(id) }
            }
        case .disconnected(let code) where code != 0:
            let said = progress.withLock { $0.lastError } ?? MosquittoError.words(for: code)
            let connected = progress.withLock { $0.connackAfter != nil }
            fail(connected ? .lost : .closed, said)
        case .log(let level, let text)
        where level == MosquittoLogLevel.error || level == MosquittoLogLevel.warning:
            let connecting = progress.withLock { state -> Bool in
                state.lastError = text
                return state.connackAfter == nil
            }
            // A handshake that fails inside the network loop is only logged, with no
            // disconnect callback after it.
            if level == MosquittoLogLevel.error, mqtt.tls, connecting { fail(.tls, text) }
        case .disconnected, .log, .message:
            break
        }
        wake.signal()
    }
}
