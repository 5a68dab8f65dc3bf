import GateCore
import Logging
import Mosquitto
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Carries the trigger through an MQTT broker (docs/CONTRACT.md#protocol-over-mqtt): connect, subscribe to
/// the status topic, and only after the broker's SUBACK publish the trigger, so
/// that the ESP32's `1` cannot arrive before anyone listens for it.
///
/// The budget includes resolving and connecting: a connection that ends after
/// the deadline publishes nothing (the permit refuses). A connection that fails
/// is reported as `unreachable` with the broker's or the library's own words.
public struct MQTTAdapter: GateAdapter {
    public let kind = AdapterKind.mqtt
    let config: MQTTConfig
    let credentials: CredentialLookup
    let logger: Logger
    /// Connect to the broker with a plain TCP connection bounded by the budget before
    /// libmosquitto's own connect, which blocks until the kernel gives up (about two
    /// minutes) on a broker that drops packets. For the daemon: a `gate open` process
    /// ends with its opening and takes such a thread with it, and spares the round trip.
    let tcpFirst: Bool
    /// Where the exchange counts its connection while it is up.
    let sessions: MQTTSessions?

    public init(
        config: MQTTConfig,
        credentials: CredentialLookup,
        logger: Logger,
        tcpFirst: Bool = false,
        sessions: MQTTSessions? = nil
    ) {
        self.config = config
        self.credentials = credentials
        self.logger = logger
        self.tcpFirst = tcpFirst
        self.sessions = sessions
    }

    public func attempt(_ ticket: AttemptTicket) -> AttemptCancel {
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            ticket.report(.unreachable("cannot prepare the MQTT exchange: \(SystemError("pipe", code: error.code))"))
            ticket.finish()
            return AttemptCancel {}
        }
        let exchange = MQTTExchange(
            config: config,
            credentials: credentials,
            logger: logger,
            ticket: ticket,
            tcpFirst: tcpFirst,
            sessions: sessions
        )
        let failure = OSThread.detach {
            exchange.run(wake: wake)
            ticket.finish()
        }
        if let failure {
            ticket.report(
                .unreachable("cannot start the MQTT exchange: \(SystemError("pthread_create", code: failure))")
            )
            ticket.finish()
        }
        return AttemptCancel { wake.signal() }
    }
}

/// One trigger through the broker, on the thread that owns the client: connect,
/// the network loop and every callback run there, so a status message can never
/// be handled before the publish it follows.
final class MQTTExchange: Sendable {
    enum Phase: Sendable {
        case connecting
        case subscribing(messageID: Int32)
        /// SUBACK seen: the loop reads what already arrived, then publishes.
        case subscribed
        case published
        case over
    }

    let topic: MQTTStatusTopic
    let credentials: CredentialLookup
    let logger: Logger
    let ticket: AttemptTicket
    let phase = Mutex(Phase.connecting)
    /// The library's last error log line: TLS failures are only described there.
    let lastError = Mutex<String?>(nil)
    let client = Mutex<MosquittoClient?>(nil)
    let tcpFirst: Bool
    let sessions: MQTTSessions?

    init(
        config: MQTTConfig,
        credentials: CredentialLookup,
        logger: Logger,
        ticket: AttemptTicket,
        tcpFirst: Bool = false,
        sessions: MQTTSessions? = nil
    ) {
        self.topic = MQTTStatusTopic(config: config)
        self.credentials = credentials
        self.logger = logger
        self.ticket = ticket
        self.tcpFirst = tcpFirst
        self.sessions = sessions
    }

    var config: MQTTConfig { topic.config }
    var broker: String { topic.broker }

    func run(wake: WakeSignal) {
        var password: Secret?
        if config.username != nil {
            switch credentials.mqttPassword() {
            case .success(let secret): password = secret
            case .failure(let failure):
                logger.info("no usable MQTT password", metadata: ["looked": "\(failure.looked)"])
                ticket.report(.misconfigured(failure.message))
                return
            }
        }
        if tcpFirst, let failure = brokerSilence() {
            fail(failure)
            return
        }
        // The handler holds this exchange and the exchange holds the client: the
        // cycle is cut here, after the loop (run on this thread) has returned, so the
        // client is never freed from inside one of its own callbacks.
        defer { client.withLock { $0 = nil } }
        let session: MosquittoClient
        do {
            session = try MQTTStatusTopic.makeClient(config: config, password: password) { [self] event in handle(event)
            }
            password = nil
            client.withLock { $0 = session }
            ticket.doing("connecting to MQTT broker at \(broker)")
            logger.debug(
                "connecting",
                metadata: ["adapter": "mqtt", "broker": "\(broker)", "client_id": "\(session.clientID)"]
            )
            try session.connect(host: config.host, port: Int32(config.port), keepAlive: 60)
        } catch {
            fail(connectFailure("\(error)\(lastErrorSuffix)"))
            return
        }
        sessions?.began()
        // After the DISCONNECT below, the last statement.
        defer { sessions?.ended() }
        let lost = runLoop(session, wake: wake)
        let reached = phase.withLock { phase -> Phase in
            defer { phase = .over }
            return phase
        }
        switch reached {
        case .connecting where lost != nil && !config.tls:
            ticket.report(.unreachable(closedBeforeConnack(lost ?? "")))
        case .connecting:
            ticket.report(.unreachable(connectFailure("\(lost ?? "no CONNACK within the budget")\(lastErrorSuffix)")))
        case .subscribing, .subscribed:
            ticket.report(
                .unreachable("MQTT broker at \(broker) did not acknowledge the subscription within the budget")
            )
        case .published where lost != nil:
            ticket.report(.lost("lost the connection to MQTT broker at \(broker) (\(lost ?? ""))\(lastErrorSuffix)"))
        case .published:
            ticket.report(.deadlineReached)
        case .over:
            break
        }
        session.disconnect()
    }

    /// Why the broker cannot be reached by TCP within the budget, or nil when it
    /// answers. Sends nothing but a TCP handshake.
    private func brokerSilence() -> String? {
        ticket.doing("connecting to MQTT broker at \(broker)")
        let addresses: [SocketAddress]
        switch HostResolver.addresses(host: config.host, port: config.port, socketType: Int32(SOCK_STREAM.rawValue)) {
        case .success(let found): addresses = found
        case .failure(let failure): return "cannot reach MQTT broker at \(broker): \(failure.message)"
        }
        let deadline =
            MonotonicNanoseconds.now() + UInt64(ticket.deadline.duration(since: ticket.now()).nanosecondsClamped)
        var last = TCPConnect.Failure.timedOut
        for address in addresses {
            switch TCPConnect.open(to: address, until: deadline) {
            case .success(let fd):
                close(fd)
                return nil
            case .failure(let failure):
                last = failure
            }
        }
        switch last {
        case .timedOut:
            return "cannot reach MQTT broker at \(broker): no answer to the TCP connection within the budget"
        case .failed(let error):
            return "cannot reach MQTT broker at \(broker): \(error)"
        }
    }

    /// The longest the loop waits before looking at the opening's clock again (a
    /// test's clock moves by hand). Nothing else waits for it: the socket and the
    /// wake-up end the wait as soon as anything arrives.
    static let loopSliceMs: Int32 = 20

    /// Runs the client's network loop on this thread until the deadline, the wake-up,
    /// the end of the exchange, or a lost connection (then returns its words). At the
    /// deadline or the wake-up, what already arrived is read first: it is evidence.
    private func runLoop(_ session: MosquittoClient, wake: WakeSignal) -> String? {
        while true {
            if case .over = phase.withLock({ $0 }) { return nil }
            let now = ticket.now()
            if now >= ticket.deadline || wake.isSignalled {
                let code = session.loopOnce(timeoutMs: 0)
                return code == MosquittoError.success ? nil : MosquittoError.words(for: code)
            }
            if case .subscribed = phase.withLock({ $0 }) {
                // A status message that came with the SUBACK is read before the trigger
                // goes: a `1` there means another client's cycle holds the relay.
                let code = session.loopOnce(timeoutMs: 0)
                if code != MosquittoError.success { return MosquittoError.words(for: code) }
                publishTrigger()
                continue
            }
            let remainingMs = Int32(clamping: (ticket.deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
            // The wake-up is waited for with the socket: at the end of the opening the
            // loop returns at once and the DISCONNECT leaves while the opening is
            // recorded, not after the process is gone.
            var ready = [
                pollfd(
                    fd: session.socket,
                    events: Int16(POLLIN) | (session.wantsToWrite ? Int16(POLLOUT) : 0),
                    revents: 0
                ),
                pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
            ]
            let until = MonotonicNanoseconds.now() + UInt64(min(remainingMs, Self.loopSliceMs)) * 1_000_000
            if case .failure(let error) = Poll.wait(&ready, until: until) { return "\(error)" }
            let code = session.loopOnce(timeoutMs: 0)
            if code != MosquittoError.success { return MosquittoError.words(for: code) }
        }
    }

    /// Why connecting failed, in words: a TLS client at a plain port said so with its
    /// fix (OpenSSL's own words at `-v`), anything else with the library's words.
    private func connectFailure(_ detail: String) -> String {
        if let words = topic.untrustedCertificateWords(detail: detail) { return words }
        guard let words = topic.plainPortWords(detail: detail) else {
            return "cannot reach MQTT broker at \(broker): \(detail)"
        }
        logger.info(
            "TLS handshake failed",
            metadata: ["adapter": "mqtt", "broker": "\(broker)", "detail": "\(detail)"]
        )
        return words
    }

    /// A plaintext client whose connection closed before the CONNACK: a TLS listener
    /// drops a plaintext CONNECT without a word.
    private func closedBeforeConnack(_ detail: String) -> String {
        logger.info(
            "the connection closed before the CONNACK",
            metadata: ["adapter": "mqtt", "broker": "\(broker)", "detail": "\(detail)"]
        )
        return topic.tlsPortWords
    }

    private var lastErrorSuffix: String {
        lastError.withLock { $0 }.map { " (\($0))" } ?? ""
    }

    /// Runs on the exchange's own thread, inside `connect` or `loopOnce`.
    private func handle(_ event: MosquittoEvent) {
        switch event {
        case .log(let level, let text):
            logger.trace("mqtt client", metadata: ["adapter": "mqtt", "text": "\(text)"])
            guard level == MosquittoLogLevel.error || level == MosquittoLogLevel.warning else { return }
            lastError.withLock { $0 = text }
            // A TLS handshake that fails inside the network loop is only logged: no
            // disconnect callback follows, and the loop would retry until the budget ends.
            if level == MosquittoLogLevel.error, case .connecting = phase.withLock({ $0 }) {
                fail(connectFailure(text))
            }

        case .connected(let code):
            guard code == 0 else {
                fail("MQTT broker at \(broker) refused the connection: \(MosquittoError.connackWords(for: code))")
                return
            }
            logger.debug("connected", metadata: ["adapter": "mqtt", "broker": "\(broker)"])
            ticket.doing("subscribing to \(config.statusTopic) at \(broker)")
            do {
                let messageID = try withClient { try $0.subscribe(topic: config.statusTopic, qos: 0) }
                phase.withLock { phase in
                    if case .connecting = phase { phase = .subscribing(messageID: messageID) }
                }
            } catch {
                fail("cannot subscribe to \(config.statusTopic) at \(broker): \(error)")
            }

        case .subscribed(let messageID, let granted):
            let expected = phase.withLock { phase -> Bool in
                if case .subscribing(let id) = phase, id == messageID { return true }
                return false
            }
            guard expected else { return }
            if MQTTStatusTopic.refused(granted: granted) {
                fail(topic.refusalWords)
                return
            }
            phase.withLock { phase in
                if case .subscribing = phase { phase = .subscribed }
            }

        case .message(let name, let payload, let retained):
            guard let report = topic.report(topic: name, payload: payload, retained: retained) else {
                if name == config.statusTopic, retained {
                    logger.debug("retained status ignored", metadata: ["adapter": "mqtt", "topic": "\(name)"])
                }
                return
            }
            // Before the trigger a `1` marks the relay busy; after it, it is the answer.
            ticket.observe(report)

        case .disconnected(let code):
            guard code != 0 else { return }
            let words = lastErrorSuffix.isEmpty ? " (\(MosquittoError.words(for: code)))" : lastErrorSuffix
            switch phase.withLock({ $0 }) {
            case .published:
                end(.lost("lost the connection to MQTT broker at \(broker)\(words)"))
            case .connecting where !config.tls:
                fail(closedBeforeConnack(words))
            case .connecting, .subscribing, .subscribed, .over:
                fail("lost the connection to MQTT broker at \(broker)\(words)")
            }

        case .published:
            break
        }
    }

    /// Publishes the trigger once, through the permit: not past the deadline, not
    /// onto a busy relay. Runs on the exchange's thread, between two loop passes.
    private func publishTrigger() {
        guard case .subscribed = phase.withLock({ $0 }) else { return }
        var failure: (any Error)?
        let sent = ticket.send {
            do {
                try withClient {
                    _ = try $0.publish(
                        topic: config.triggerTopic,
                        payload: MQTTStatusTopic.triggerPayload(),
                        qos: 0,
                        retain: false
                    )
                }
            } catch {
                failure = error
            }
        }
        guard sent else {
            phase.withLock { $0 = .over }
            return
        }
        if let failure {
            // The client refused before anything was written (no connection, bad topic):
            // the broker cannot have passed it on whole.
            end(.unreachable("cannot publish the trigger to \(config.triggerTopic) at \(broker): \(failure)"))
            return
        }
        phase.withLock { phase in
            if case .subscribed = phase { phase = .published }
        }
        logger.debug("trigger published", metadata: ["adapter": "mqtt", "topic": "\(config.triggerTopic)"])
    }

    /// Ends the attempt with a failure before the trigger, once.
    private func fail(_ reason: String) {
        end(.unreachable(reason))
    }

    /// Ends the attempt with its last word, once; later failures add nothing.
    private func end(_ event: AdapterEvent) {
        let first = phase.withLock { phase -> Bool in
            if case .over = phase { return false }
            phase = .over
            return true
        }
        if first { ticket.report(event) }
    }

    private func withClient<R>(_ body: (MosquittoClient) throws -> R) throws -> R {
        // The client is set before the loop starts, so events never see it missing.
        guard let current = client.withLock({ $0 }) else {
            throw MosquittoError(call: "mosquitto_new", words: "no MQTT client")
        }
        return try body(current)
    }
}
