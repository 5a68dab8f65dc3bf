import Glibc
import Logging
import Mosquitto
import Synchronization

/// The ESP32's MQTT side, as its firmware does it: a clean-session client subscribed to the
/// trigger topic, publishing every relay change on the status topic (`1` / `0`, QoS 0, not
/// retained; `x` under the garbage fault), whatever transport triggered the change.
/// Under protocol 2 it subscribes as the firmware does (`<trigger>/v2` once a key is
/// provisioned, the plain topic while v1 is accepted), publishes the device's replies on
/// `<status>/v2` and its retained epoch announcements on `<status>/v2/epoch/<key_id>`.
///
/// Every event comes on libmosquitto's network thread, which must never block: the handler
/// only updates state, logs and queues packets (subscribe and publish just queue there).
final class MQTTTransport: Sendable {
    /// How the first connection went; later connections only log.
    enum Startup: Sendable, Equatable {
        case pending
        case subscribed
        case failed(String)
    }

    private struct State {
        var startup = Startup.pending
        var connected = false
        /// The SUBSCRIBEs whose SUBACK is awaited: message id, topic.
        var subscriptions: [Int32: String] = [:]
        /// TLS errors reach us only as library log lines; the last one explains a disconnect.
        var lastLibraryError: String?
        var stopping = false
    }

    let settings: MQTTSettings
    let clientID: String
    private let client: MosquittoClient
    private let firmware: Firmware
    /// The topics to subscribe to at every connection.
    private let triggerTopics: [String]
    private let logger: Logger
    private let state = Mutex(State())

    init(settings: MQTTSettings, firmware: Firmware, logger: Logger) throws(MosquittoError) {
        let forwarder = EventForwarder()
        let clientID = "esp32-sim-" + String((0..<8).map { _ in "0123456789abcdef".randomElement()! })
        client = try MosquittoClient(clientID: clientID) { forwarder.forward($0) }
        self.settings = settings
        self.clientID = clientID
        self.firmware = firmware
        switch firmware {
        case .v1:
            triggerTopics = [settings.triggerTopic]
        case .v2(let device):
            let listens = device.listensOnMQTT
            triggerTopics = (listens.v2 ? [settings.triggerTopicV2] : []) + (listens.v1 ? [settings.triggerTopic] : [])
        }
        self.logger = logger
        forwarder.attach(self)

        if let username = settings.username {
            if let password = settings.password {
                try password.withUnsafeBufferPointer { buffer throws(MosquittoError) in
                    try client.setCredentials(username: username, password: buffer)
                }
            } else {
                try client.setCredentials(username: username, password: nil)
            }
        }
        if let caFile = settings.caFile {
            try client.enableTLS(.init(caFile: caFile))
        }
        // Short, so that a restarted broker sees the device back within about two seconds.
        try client.setReconnectDelay(minimum: 1, maximum: 2)
    }

    /// Starts connecting (resolving the host name here, blocking) and the network thread;
    /// the outcome shows in `startup`. Call after the signal mask is set: the thread inherits it.
    func start() throws(MosquittoError) {
        try client.connect(host: settings.host, port: Int32(settings.port), keepAlive: 60)
        try client.startLoop()
    }

    var startup: Startup { state.withLock { $0.startup } }

    /// The library's last error line (TLS errors show only there), for error messages.
    var lastLibraryError: String? { state.withLock { $0.lastLibraryError } }

    /// Why `startup` is still pending after `waited`, in words for the user.
    func startupTimeoutReason(after waited: Duration) -> String {
        let (connected, lastError) = state.withLock { ($0.connected, $0.lastLibraryError) }
        let limit = "\(milliseconds(waited) / 1000) s"
        let what =
            connected
            ? "connected but no SUBACK for \(settings.triggerTopic) within \(limit)"
            : "no CONNACK within \(limit)"
        return "MQTT broker \(settings.broker): \(what)" + (lastError.map { " (library: \($0))" } ?? "")
    }

    /// Says goodbye to the broker (queued status reports go out first) and ends the thread.
    func stop() {
        state.withLock { $0.stopping = true }
        client.disconnect()
        client.stopLoop(force: false)
    }

    /// Gives up on a broker that refused us: no goodbye to send, and the thread may be
    /// sleeping before its next reconnection attempt.
    func abandon() {
        state.withLock { $0.stopping = true }
        client.stopLoop(force: true)
    }

    /// The relay's observer: publishes one report on the status topic.
    func publish(_ report: V1Report) {
        let payload =
            switch report {
            case .activated: "1"
            case .released: "0"
            case .garbage: "x"
            }
        publish(payload, on: settings.statusTopic, retained: false, what: "\(payload) (\(report))")
    }

    /// The protocol 2 device's outlet.
    func publish(_ publication: V2Publication) {
        switch publication {
        case .relay(let payload):
            publish(payload, on: settings.statusTopic, retained: false, what: payload)
        case .reply(let hex):
            publish(hex, on: settings.repliesTopic, retained: false, what: "reply \(hex.prefix(4))…")
        case .announcement(let keyID, let hex):
            publish(hex, on: settings.epochTopic(keyID: keyID), retained: true, what: "epoch announcement (retained)")
        }
    }

    /// QoS 0: a publication while disconnected is lost, as on the firmware (a late relay
    /// report would be a false one).
    private func publish(_ payload: String, on topic: String, retained: Bool, what: String) {
        do {
            try client.publish(topic: topic, payload: Array(payload.utf8), qos: 0, retain: retained)
            logger.info("published \(what) on \(topic)")
        } catch {
            logger.warning("\(what) not published on \(topic): \(error)")
        }
    }

    fileprivate func handle(_ event: MosquittoEvent) {
        switch event {
        case .connected(let code):
            connected(code: code)
        case .disconnected(let code):
            disconnected(code: code)
        case .subscribed(let messageID, let granted):
            subscribed(messageID: messageID, granted: granted)
        case .message(let topic, let payload, let retained):
            received(topic: topic, payload: payload, retained: retained)
        case .published:
            break
        case .log(let level, let text):
            if level == MosquittoLogLevel.error {
                state.withLock { $0.lastLibraryError = text }
                // During the first connection an error line is a TLS failure, after which
                // libmosquitto's thread gives up without a disconnect event: waiting on
                // would only end in the startup timeout.
                if !failStartup("MQTT broker \(settings.broker): \(text)") {
                    logger.warning("mqtt library: \(text)")
                }
            } else {
                logger.debug("mqtt library: \(text)")
            }
        }
    }

    private func connected(code: Int32) {
        guard code == 0 else {
            let words = MosquittoError.connackWords(for: code)
            if !failStartup("MQTT broker \(settings.broker) refused the connection: \(words)") {
                logger.warning("MQTT broker \(settings.broker) refused the reconnection: \(words); retrying")
            }
            return
        }
        let firstTime = state.withLock { state in
            state.connected = true
            state.lastLibraryError = nil
            return state.startup == .pending
        }
        logger.info("\(firstTime ? "connected" : "reconnected") to MQTT broker \(settings.broker) as \(clientID)")
        // Queued before the SUBSCRIBEs: the broker handles a client's packets in order, so
        // the retained announcements are stored by the time the SUBACK (and "ready") comes.
        if case .v2(let device) = firmware { device.mqttConnected() }
        // A clean session forgets subscriptions, so every connection subscribes anew. Called
        // here, on the network thread, the SUBSCRIBE is only queued: its SUBACK cannot
        // arrive before the message id is stored below.
        for topic in triggerTopics {
            do {
                let messageID = try client.subscribe(topic: topic, qos: 0)
                state.withLock { $0.subscriptions[messageID] = topic }
            } catch {
                if !failStartup("MQTT broker \(settings.broker): cannot subscribe to \(topic): \(error)") {
                    logger.error("cannot subscribe to \(topic) again: \(error)")
                }
            }
        }
    }

    private func subscribed(messageID: Int32, granted: [Int32]) {
        let (topic, waitingForOthers) = state.withLock { state in
            (state.subscriptions.removeValue(forKey: messageID), !state.subscriptions.isEmpty)
        }
        guard let topic else { return }
        // 0x80 is the broker's refusal, e.g. an ACL that does not grant the topic.
        guard granted.allSatisfy({ $0 < 0x80 }) else {
            let message = "MQTT broker \(settings.broker) refused the subscription to \(topic)"
            if !failStartup(message) { logger.error("\(message); triggers over MQTT are lost") }
            return
        }
        let firstTime = state.withLock { state in
            guard state.startup == .pending else { return false }
            if !waitingForOthers { state.startup = .subscribed }
            return true
        }
        logger.info("subscribed to \(topic)\(firstTime ? "" : " again")")
    }

    private func disconnected(code: Int32) {
        let (stopping, lastError) = state.withLock { state in
            state.connected = false
            state.subscriptions = [:]
            return (state.stopping, state.lastLibraryError)
        }
        guard !stopping else {
            logger.debug("disconnected from MQTT broker \(settings.broker)")
            return
        }
        let words = MosquittoError.words(for: code) + (lastError.map { " (library: \($0))" } ?? "")
        if !failStartup("MQTT broker \(settings.broker): connection lost before subscribing: \(words)") {
            logger.warning("lost the connection to MQTT broker \(settings.broker): \(words); reconnecting")
        }
    }

    private func received(topic: String, payload: [UInt8], retained: Bool) {
        let text = String(decoding: payload, as: UTF8.self)
        guard triggerTopics.contains(topic) else {
            logger.debug("ignored message on \(topic): \(jsonString(text))")
            return
        }
        // The broker replays a retained trigger to every new subscription: it is an old
        // command, and acting on it would open the gate on every reconnection.
        guard !retained else {
            logger.info("ignored retained trigger on \(topic) (payload \(jsonString(text))): stale")
            return
        }
        switch firmware {
        case .v1(let relay):
            let note =
                !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
                ? "" : " (not a Unix time; accepted anyway)"
            logger.info("trigger received via mqtt on \(topic): payload \(jsonString(text))\(note)")
            relay.trigger(via: .mqtt, from: nil, payload: text, reply: nil)
        case .v2(let device):
            device.received(topic == settings.triggerTopicV2 ? .v2Message(payload) : .v1Message(text))
        }
    }

    /// Records the first connection's failure; false when that moment has passed.
    private func failStartup(_ message: String) -> Bool {
        state.withLock { state in
            guard state.startup == .pending else { return false }
            state.startup = .failed(message)
            return true
        }
    }
}

/// Hands events to the transport without the client keeping it alive: the client (owned by
/// the transport) holds this, so a strong reference back would be a cycle.
private final class EventForwarder: Sendable {
    private struct Target {
        weak var transport: MQTTTransport?
    }

    private let target = Mutex(Target())

    func attach(_ transport: MQTTTransport) {
        target.withLock { $0.transport = transport }
    }

    func forward(_ event: MosquittoEvent) {
        target.withLock { $0.transport }?.handle(event)
    }
}
