#if canImport(Glibc)
import Glibc
#endif
import GateCore
import Threading
import Logging
import Mosquitto
import Synchronization

/// Carries the trigger through an MQTT broker (SPEC §1): connect, subscribe to
/// the status topic, and only after the broker's SUBACK publish the trigger, so
/// that the ESP32's `1` cannot arrive before anyone listens for it.
///
/// The budget includes connecting. A connection that fails, or does not finish
/// within the budget, is reported as `unreachable` with the broker's or the
/// library's own words; nothing has been published then.
public struct MQTTAdapter: GateAdapter {
    public let kind = AdapterKind.mqtt
    let config: MQTTConfig
    let credentials: CredentialLookup
    let logger: Logger

    public init(config: MQTTConfig, credentials: CredentialLookup, logger: Logger) {
        self.config = config
        self.credentials = credentials
        self.logger = logger
    }

    public func attempt(deadline: MonotonicInstant) -> AdapterAttempt {
        let (config, credentials, logger) = (self.config, self.credentials, self.logger)
        return .onOwnThread("MQTT exchange") { continuation, wake in
            MQTTExchange(config: config, credentials: credentials, logger: logger, continuation: continuation, release: TriggerRelease(deadline: deadline))
                .run(wake: wake)
        }
    }

    /// `gate-` plus 8 random hex digits (SPEC §1).
    static func clientID(prefix: String) -> String {
        let value = UInt32.random(in: .min ... .max)
        let hex = String(value, radix: 16)
        return prefix + String(repeating: "0", count: 8 - hex.count) + hex
    }
}

/// One trigger through the broker, from the thread that owns the client.
///
/// The trigger goes when the subscription is acknowledged and `release` allows it:
/// at once for a connection made by the adapter, or, for an exchange begun early
/// (`EarlyMQTTExchange`), when the opening starts the adapter. Publishing happens
/// only on this thread, so a status message can never be read before `.sent`.
final class MQTTExchange: Sendable {
    enum Phase: Sendable {
        case connecting
        case subscribing(messageID: Int32)
        /// SUBACK seen; the trigger waits for `release`.
        case subscribed
        case published
        case over
    }

    let config: MQTTConfig
    let credentials: CredentialLookup
    let logger: Logger
    let continuation: AsyncStream<AdapterEvent>.Continuation
    let phase = Mutex(Phase.connecting)
    /// CONNACK seen: told apart from the phase because SUBSCRIBE is sent before it.
    let connackSeen = Mutex(false)
    /// The library's last error log line: TLS failures are only described there.
    let lastError = Mutex<String?>(nil)
    let client = Mutex<(any MQTTSession)?>(nil)
    let release: TriggerRelease

    init(
        config: MQTTConfig, credentials: CredentialLookup, logger: Logger,
        continuation: AsyncStream<AdapterEvent>.Continuation, release: TriggerRelease
    ) {
        self.config = config
        self.credentials = credentials
        self.logger = logger
        self.continuation = continuation
        self.release = release
    }

    var broker: String { config.host.contains(":") ? "[\(config.host)]:\(config.port)" : "\(config.host):\(config.port)" }

    func run(wake: WakeSignal) {
        defer { continuation.finish() }
        var password: Secret?
        if config.username != nil {
            switch credentials.mqttPassword() {
            case .success(let secret): password = secret
            case .failure(let failure):
                continuation.yield(.misconfigured(failure.message))
                return
            }
        }
        let session: any MQTTSession
        // The handler holds this exchange and the exchange holds the client: the
        // cycle is cut here, after the loop (run on this thread) has returned, so the
        // client is never freed from inside one of its own callbacks.
        defer { client.withLock { $0 = nil } }
        do {
            session = try Self.makeSession(config: config, password: password) { [self] event in
                handle(event)
            }
            password = nil
            client.withLock { $0 = session }
            logger.debug("connecting", metadata: ["adapter": "mqtt", "broker": "\(broker)", "client_id": "\(session.clientID)"])
            try session.connect(host: config.host, port: config.port, keepAlive: 60, deadline: release.state().deadline)
        } catch {
            // A TLS failure happens inside connect; its words are in the log, and the log
            // handler may already have reported it (fail reports once).
            fail("cannot reach MQTT broker at \(broker): \(error)\(lastErrorSuffix)")
            return
        }
        // SUBSCRIBE waits for the CONNACK although MQTT would allow it earlier: a broker
        // that refuses the login closes the socket, and a SUBSCRIBE already in flight
        // then fails with EPIPE before the CONNACK's "not authorised" is read.
        let lost = runLoop(session, wake: wake)
        let reached = phase.withLock { phase -> Phase in
            defer { phase = .over }
            return phase
        }
        let connected = connackSeen.withLock { $0 }
        switch reached {
        case .connecting:
            continuation.yield(.unreachable("cannot reach MQTT broker at \(broker): \(lost ?? "no CONNACK within the budget")\(lastErrorSuffix)"))
        case .subscribing where !connected:
            continuation.yield(.unreachable("cannot reach MQTT broker at \(broker): no CONNACK within the budget\(lastErrorSuffix)"))
        case .subscribing:
            continuation.yield(.unreachable("MQTT broker at \(broker) did not acknowledge the subscription within the budget"))
        case .subscribed:
            // Only an early exchange waits here: the opening never asked for the trigger.
            continuation.yield(.unreachable("the connection to MQTT broker at \(broker) ended before the opening sent its trigger"))
        case .published where lost != nil:
            continuation.yield(.unreachable("lost the connection to MQTT broker at \(broker) (\(lost ?? ""))\(lastErrorSuffix)"))
        case .published:
            continuation.yield(.deadlineReached)
        case .over:
            break
        }
        session.disconnect()
    }

    /// The longest the loop waits for the socket before looking at the deadline and
    /// the wake-up again: how late a cancelled exchange may notice. Data never waits
    /// for it: the socket wakes the loop as soon as anything arrives.
    static let loopSliceMs: Int32 = 20

    /// Runs the client's network loop on this thread (no thread of libmosquitto's:
    /// nothing to cancel when the exchange ends) until the deadline, the consumer
    /// stops listening, the exchange is over, or the connection is gone; then returns
    /// the client's words for a lost connection, if that is why it stopped.
    private func runLoop(_ session: any MQTTSession, wake: WakeSignal) -> String? {
        var fds = [pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)]
        while true {
            let (deadline, released) = release.state()
            let now = MonotonicClock.now()
            guard now < deadline else { return nil }
            if poll(&fds, 1, 0) > 0 { return nil }
            let remainingMs = Int32(clamping: (deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
            switch phase.withLock({ $0 }) {
            case .over:
                return nil
            case .subscribed where released:
                publishTrigger()
                continue
            case .subscribed:
                // Subscribed, trigger held: sleep until the release, the cancel or the
                // broker (a status message to ignore, or a lost connection) needs us.
                // libmosquitto's own wait could not be woken by the release.
                var waits = [
                    pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: release.signal?.fd ?? -1, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: session.socket, events: Int16(POLLIN), revents: 0),
                ]
                guard poll(&waits, 3, min(remainingMs, Self.heldSliceMs)) > 0, waits[2].revents != 0 else { continue }
                if let lost = session.loopOnce(timeoutMs: 0) { return lost }
            case .connecting, .subscribing, .published:
                if let lost = session.loopOnce(timeoutMs: min(remainingMs, Self.loopSliceMs)) { return lost }
            }
        }
    }

    /// How long a held exchange sleeps at most before it looks at the deadline again.
    static let heldSliceMs: Int32 = 1000

    private var lastErrorSuffix: String {
        lastError.withLock { $0 }.map { " (\($0))" } ?? ""
    }

    /// Runs on the exchange's own thread, inside `connect` or `loopOnce`.
    private func handle(_ event: MQTTSessionEvent) {
        switch event {
        case .trace(let text):
            logger.trace("mqtt client", metadata: ["adapter": "mqtt", "text": "\(text)"])

        case .problem(let text, let fatalWhileConnecting):
            lastError.withLock { $0 = text }
            let connecting = !connackSeen.withLock { $0 }
            if connecting, fatalWhileConnecting {
                fail("cannot reach MQTT broker at \(broker): \(text)")
            }

        case .connected(let code):
            guard code == 0 else {
                let words = (try? withClient { $0.connackWords(for: code) }) ?? MQTTPacket.connackWords(for: code)
                fail("MQTT broker at \(broker) refused the connection: \(words)")
                return
            }
            connackSeen.withLock { $0 = true }
            logger.debug("connected", metadata: ["adapter": "mqtt", "broker": "\(broker)"])
            do {
                let messageID = try withClient { try $0.subscribe(topic: config.statusTopic) }
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
            if granted.first.map({ $0 > 2 }) ?? true {
                fail("MQTT broker at \(broker) refused the subscription to \(config.statusTopic) (not authorised for that topic?)")
                return
            }
            phase.withLock { phase in
                if case .subscribing = phase { phase = .subscribed }
            }
            if release.state().released {
                publishTrigger()
            }

        case .message(let topic, let payload, let retained):
            guard topic == config.statusTopic else { return }
            let active = phase.withLock { phase -> Bool in
                if case .published = phase { return true }
                return false
            }
            guard active else { return }
            if retained {
                // Retained status is whatever the relay did last time: stale by definition.
                logger.debug("retained status ignored", metadata: ["adapter": "mqtt", "topic": "\(topic)"])
                return
            }
            continuation.yield(MQTTStatusDecoder.event(for: payload, topic: topic))

        case .disconnected(let code):
            guard code != 0 else { return }
            let words = lastErrorSuffix.isEmpty ? " (\(MosquittoError.words(for: code)))" : lastErrorSuffix
            fail("lost the connection to MQTT broker at \(broker)\(words)")
        }
    }

    /// Publishes the trigger once: the phase moves from `subscribed` to `published`
    /// before the call, so no second path through here can publish again.
    private func publishTrigger() {
        let claimed = phase.withLock { phase -> Bool in
            guard case .subscribed = phase else { return false }
            phase = .published
            return true
        }
        guard claimed else { return }
        let seconds = WallClock.nowNanoseconds() / 1_000_000_000
        do {
            try withClient { try $0.publish(topic: config.triggerTopic, payload: Array(String(seconds).utf8)) }
        } catch {
            // The client refused before anything was written (no connection, bad topic),
            // or the write itself failed: the broker cannot have passed it on whole, so
            // this is a failure before `.sent`.
            fail("cannot publish the trigger to \(config.triggerTopic) at \(broker): \(error)")
            return
        }
        logger.debug("trigger published", metadata: ["adapter": "mqtt", "topic": "\(config.triggerTopic)", "payload": "\(seconds)"])
        continuation.yield(.sent)
    }

    /// Ends the attempt with a failure once; later failures add nothing.
    private func fail(_ reason: String) {
        let first = phase.withLock { phase -> Bool in
            if case .over = phase { return false }
            phase = .over
            return true
        }
        if first { continuation.yield(.unreachable(reason)) }
    }

    private func withClient<R>(_ body: (any MQTTSession) throws -> R) throws -> R {
        // The client is set before the loop starts, so events never see it missing.
        guard let current = client.withLock({ $0 }) else {
            throw PlainMQTTError("no MQTT client")
        }
        return try body(current)
    }
}
