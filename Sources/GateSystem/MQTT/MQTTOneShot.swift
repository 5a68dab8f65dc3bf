import GateCore
import Mosquitto
import Plumbing
import Synchronization

/// One short MQTT session outside the daemon: connect, optionally subscribe to one
/// topic (for its SUBACK only), publish some messages with QoS 1 and wait for their
/// PUBACKs, disconnect. `gate homeassistant remove` and `gate doctor` use it; it
/// never publishes to the ESP32's trigger topic.
public final class MQTTOneShot: Sendable {
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case setup(String)
        case connect(String)
        case refused(String)
        case timedOut(String)

        public var description: String {
            switch self {
            case .setup(let words), .connect(let words), .refused(let words), .timedOut(let words): words
            }
        }
    }

    public struct Outcome: Sendable, Equatable {
        /// Whether the broker granted the subscription; nil when none was asked for.
        public var subscriptionGranted: Bool?
    }

    private struct Progress {
        var connack: Int32?
        var subscribeID: Int32?
        var granted: Bool?
        /// SUBACKs by message id: one may come before `subscribe` returned its id.
        var subacks: [Int32: Bool] = [:]
        var pending: Set<Int32> = []
        /// PUBACKs seen before their `publish` call returned.
        var early: Set<Int32> = []
        var published = false
        var lastError: String?
    }

    private let progress = Mutex(Progress())
    private let wake: WakeSignal

    private init() throws(WakeSignalError) {
        wake = try WakeSignal()
    }

    /// Runs the session on the calling thread (it blocks), bounded by `timeout` after connecting.
    public static func run(
        _ mqtt: MQTTConfig,
        password: Secret?,
        subscribe: String? = nil,
        publish messages: [OutgoingMessage],
        timeout: Duration
    ) -> Result<Outcome, Failure> {
        let session: MQTTOneShot
        do {
            session = try MQTTOneShot()
        } catch {
            return .failure(.setup("cannot make a wake-up pipe: \(SystemError("pipe", code: error.code))"))
        }
        return session.run(mqtt, password: password, subscribe: subscribe, messages: messages, timeout: timeout)
    }

    private func run(
        _ mqtt: MQTTConfig,
        password: Secret?,
        subscribe: String?,
        messages: [OutgoingMessage],
        timeout: Duration
    ) -> Result<Outcome, Failure> {
        let broker = MQTTStatusTopic(config: mqtt).broker
        let client: MosquittoClient
        do {
            client = try MQTTStatusTopic.makeClient(config: mqtt, password: password) { [self] event in handle(event) }
        } catch {
            return .failure(.setup("cannot set up the MQTT client for \(broker): \(error)"))
        }
        do throws(MosquittoError) {
            try client.connect(host: mqtt.host, port: Int32(mqtt.port), keepAlive: 60)
            try client.startLoop()
        } catch {
            let detail = progress.withLock { $0.lastError }.map { " (\($0))" } ?? ""
            return .failure(.connect("cannot reach the MQTT broker at \(broker): \(error)\(detail)"))
        }
        defer {
            client.disconnect()
            client.stopLoop(force: false)
        }
        let deadline = MonotonicClock.now() + timeout
        guard wait(until: deadline, for: { $0.connack != nil }) else {
            return .failure(.timedOut("no CONNACK from the MQTT broker at \(broker) within \(timeout)"))
        }
        let code = progress.withLock { $0.connack } ?? 0
        guard code == 0 else {
            return .failure(
                .refused("the MQTT broker at \(broker) refused the login: \(MosquittoError.connackWords(for: code))")
            )
        }
        do throws(MosquittoError) {
            if let subscribe {
                let id = try client.subscribe(topic: subscribe, qos: 1)
                progress.withLock { state in
                    state.subscribeID = id
                    state.granted = state.subacks[id]
                }
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
            return .failure(.connect("cannot send to the MQTT broker at \(broker): \(error)"))
        }
        progress.withLock { $0.published = true }
        wake.signal()
        let done = wait(until: deadline) { state in
            state.published && state.pending.isEmpty && (subscribe == nil || state.granted != nil)
        }
        guard done else {
            return .failure(.timedOut("the MQTT broker at \(broker) did not acknowledge everything within \(timeout)"))
        }
        return .success(Outcome(subscriptionGranted: progress.withLock { $0.granted }))
    }

    private func wait(until deadline: MonotonicInstant, for condition: (Progress) -> Bool) -> Bool {
        while true {
            if progress.withLock({ condition($0) }) { return true }
            let now = MonotonicClock.now()
            guard now < deadline else { return false }
            if wake.wait(until: deadline.nanoseconds) { wake.clear() }
        }
    }

    /// On libmosquitto's thread (log lines also inside `connect`).
    private func handle(_ event: MosquittoEvent) {
        switch event {
        case .connected(let code):
            progress.withLock { $0.connack = code }
        case .subscribed(let id, let granted):
            progress.withLock { state in
                state.subacks[id] = !MQTTStatusTopic.refused(granted: granted)
                if state.subscribeID == id { state.granted = state.subacks[id] }
            }
        case .published(let id):
            progress.withLock { state in
                if state.pending.remove(id) == nil { state.early.insert(id) }
            }
        case .log(let level, let text):
            if level == MosquittoLogLevel.error || level == MosquittoLogLevel.warning {
                progress.withLock { $0.lastError = text }
            }
        case .disconnected, .message:
            break
        }
        wake.signal()
    }
}
