#if canImport(Glibc)
import Glibc
#endif
import GateCore
import Threading
import Logging
import Mosquitto
import Synchronization

/// The daemon's warm connection to the broker (SPEC §3 `gate daemon`): connected
/// at start, reconnecting with backoff (1 s to 30 s), subscribed to the status
/// topic, so that a button opening publishes its trigger without connecting first.
///
/// Status messages go to the one running exchange (an opening through this link)
/// or, when none runs, to `onUnclaimed`: relay activity that no opening of this
/// process caused. Events arrive on libmosquitto's thread; only `Mutex`es and
/// continuations are shared with it.
public final class MQTTLink: Sendable {
    public let config: MQTTConfig
    let credentials: CredentialLookup
    let logger: Logger
    let onUnclaimed: @Sendable (_ payload: [UInt8], _ retained: Bool) -> Void
    let state = Mutex(LinkState())
    let wake: WakeSignal

    struct LinkState {
        var client: MosquittoClient?
        /// SUBACK for the status topic seen on the current connection.
        var ready = false
        var subscribeID: Int32?
        var exchange: LinkExchange?
        var stopped = false
        var lastError: String?
    }

    public init(
        config: MQTTConfig, credentials: CredentialLookup, logger: Logger,
        onUnclaimed: @escaping @Sendable (_ payload: [UInt8], _ retained: Bool) -> Void
    ) throws(WakeSignalError) {
        self.config = config
        self.credentials = credentials
        self.logger = logger
        self.onUnclaimed = onUnclaimed
        self.wake = try WakeSignal()
    }

    var broker: String { config.host.contains(":") ? "[\(config.host)]:\(config.port)" : "\(config.host):\(config.port)" }

    /// Connected and subscribed: an opening can publish at once.
    public var isReady: Bool { state.withLock { $0.ready && !$0.stopped } }

    /// Starts connecting on a thread of its own (a blocking connect may take as long
    /// as the kernel's TCP timeout to a dead host; no opening waits for it).
    public func start() -> Int32? {
        OSThread.detach { [self] in connectLoop() }
    }

    /// Disconnects and ends the link's threads; an exchange still running is told
    /// the link went away. Safe to call more than once.
    public func stop() {
        let (client, exchange) = state.withLock { state -> (MosquittoClient?, LinkExchange?) in
            state.stopped = true
            state.ready = false
            defer { state.client = nil; state.exchange = nil }
            return (state.client, state.exchange)
        }
        wake.signal()
        exchange?.end(.unreachable("the MQTT link to \(broker) was closed (configuration reloaded or daemon stopping)"))
        if let client {
            client.disconnect()
            // libmosquitto's thread ends by itself once it sees the disconnect. It is joined
            // on a thread of its own, not cancelled (a pthread_cancel can stop it inside the
            // library's locks; ThreadSanitizer reported that at daemon stop), and the caller
            // does not wait: a reconnect in progress to an unreachable broker keeps that
            // thread in connect(2) until the kernel gives up. The client is freed after.
            OSThread.detach { client.stopLoop(force: false) }
        }
    }

    /// The first connection, retried with backoff until it succeeds; after that
    /// libmosquitto's loop thread reconnects by itself with the same backoff.
    private func connectLoop() {
        var delay: UInt32 = Self.minimumDelay
        while !state.withLock({ $0.stopped }) {
            switch connectOnce() {
            case .success:
                // Parked until stop(): the loop thread owns the connection from here.
                waitForWake(milliseconds: -1)
                return
            case .failure(let reason):
                state.withLock { $0.lastError = reason.description }
                logger.warning("MQTT link down; retrying", metadata: [
                    "broker": "\(broker)", "reason": "\(reason)", "retry_in_s": "\(delay)",
                ])
                waitForWake(milliseconds: Int32(delay) * 1000)
                delay = min(delay * 2, Self.maximumDelay)
            }
        }
    }

    static let minimumDelay: UInt32 = 1
    static let maximumDelay: UInt32 = 30

    private func connectOnce() -> Result<Void, LinkFailure> {
        var password: Secret?
        if config.username != nil {
            switch credentials.mqttPassword() {
            case .success(let secret): password = secret
            case .failure(let failure): return .failure(LinkFailure(failure.message))
            }
        }
        do {
            let client = try MosquittoClient(clientID: MQTTAdapter.clientID(prefix: config.clientIDPrefix)) { [self] event in
                handle(event)
            }
            if let username = config.username {
                try password.map { secret in
                    try secret.withBytes { try client.setCredentials(username: username, password: $0) }
                } ?? client.setCredentials(username: username, password: nil)
            }
            password = nil
            if config.tls {
                try client.enableTLS(.init(caFile: config.caFile))
            }
            try client.setReconnectDelay(minimum: Self.minimumDelay, maximum: Self.maximumDelay)
            let installed = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.client = client
                return true
            }
            guard installed else { return .success(()) }
            logger.debug("MQTT link connecting", metadata: ["broker": "\(broker)", "client_id": "\(client.clientID)"])
            do {
                try client.connect(host: config.host, port: Int32(config.port), keepAlive: 60)
                try client.startLoop()
            } catch {
                state.withLock { if $0.client === client { $0.client = nil } }
                let detail = state.withLock { $0.lastError }.map { " (\($0))" } ?? ""
                return .failure(LinkFailure("cannot reach MQTT broker at \(broker): \(error)\(detail)"))
            }
            return .success(())
        } catch {
            return .failure(LinkFailure("cannot set up the MQTT client for \(broker): \(error)"))
        }
    }

    private func waitForWake(milliseconds: Int32) {
        var fds = [pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)]
        while poll(&fds, 1, milliseconds) < 0, errno == EINTR {}
    }

    /// Runs on libmosquitto's thread.
    private func handle(_ event: MosquittoEvent) {
        switch event {
        case .log(let level, let text):
            logger.trace("libmosquitto", metadata: ["link": "mqtt", "text": "\(text)"])
            if level == MosquittoLogLevel.error || level == MosquittoLogLevel.warning {
                state.withLock { $0.lastError = text }
            }

        case .connected(let code):
            guard code == 0 else {
                logger.warning("MQTT broker refused the link; retrying", metadata: [
                    "broker": "\(broker)", "reason": "\(MosquittoError.connackWords(for: code))",
                ])
                return
            }
            let client = state.withLock { $0.client }
            do {
                let id = try client.map { try $0.subscribe(topic: config.statusTopic, qos: 0) }
                state.withLock { $0.subscribeID = id }
            } catch {
                logger.warning("MQTT link cannot subscribe", metadata: ["topic": "\(config.statusTopic)", "error": "\(error)"])
            }

        case .subscribed(let messageID, let granted):
            let expected = state.withLock { $0.subscribeID == messageID }
            guard expected else { return }
            if granted.first.map({ $0 > 2 }) ?? true {
                logger.error("MQTT broker refused the subscription (not authorised for that topic?)", metadata: [
                    "broker": "\(broker)", "topic": "\(config.statusTopic)",
                ])
                return
            }
            state.withLock { $0.ready = true; $0.lastError = nil }
            logger.info("MQTT link up", metadata: ["broker": "\(broker)", "topic": "\(config.statusTopic)"])

        case .message(let topic, let payload, let retained):
            guard topic == config.statusTopic else { return }
            if let exchange = state.withLock({ $0.exchange }) {
                // Retained status is whatever the relay did last time: stale by definition.
                if !retained { exchange.deliver(MQTTStatusDecoder.event(for: payload, topic: topic)) }
            } else {
                onUnclaimed(payload, retained)
            }

        case .disconnected(let code):
            let (exchange, stopped, detail) = state.withLock { state -> (LinkExchange?, Bool, String?) in
                state.ready = false
                state.subscribeID = nil
                return (state.exchange, state.stopped, state.lastError)
            }
            guard code != 0, !stopped else { return }
            let words = detail ?? MosquittoError.words(for: code)
            logger.warning("MQTT link lost; reconnecting", metadata: ["broker": "\(broker)", "reason": "\(words)"])
            exchange?.end(.unreachable("lost the connection to MQTT broker at \(broker) (\(words))"))

        case .published:
            break
        }
    }

    /// One trigger through the warm link; nil when the link is not ready, so that
    /// the caller can connect afresh instead.
    public func attempt(deadline: MonotonicInstant) -> AdapterAttempt? {
        let (stream, continuation) = AsyncStream.makeStream(of: AdapterEvent.self, bufferingPolicy: .unbounded)
        let exchange = LinkExchange(continuation: continuation)
        let client = state.withLock { state -> MosquittoClient? in
            guard state.ready, !state.stopped, state.exchange == nil, let client = state.client else { return nil }
            // Registered before publishing: the `1` cannot arrive before someone listens.
            state.exchange = exchange
            return client
        }
        guard let client else { return nil }
        let release: @Sendable () -> Void = { [self] in
            state.withLock { if $0.exchange === exchange { $0.exchange = nil } }
        }
        let seconds = WallClock.nowNanoseconds() / 1_000_000_000
        do {
            _ = try client.publish(topic: config.triggerTopic, payload: Array(String(seconds).utf8), qos: 0, retain: false)
        } catch {
            exchange.end(.unreachable("cannot publish the trigger to \(config.triggerTopic) at \(broker): \(error)"))
            release()
            return AdapterAttempt(events: stream, cancel: {})
        }
        logger.debug("trigger published on the warm link", metadata: ["topic": "\(config.triggerTopic)", "payload": "\(seconds)"])
        exchange.deliver(.sent)
        let timer = Task {
            try? await Task.sleep(for: deadline.duration(since: MonotonicClock.now()))
            guard !Task.isCancelled else { return }
            exchange.end(.deadlineReached)
        }
        return AdapterAttempt(events: stream, cancel: {
            timer.cancel()
            release()
            exchange.end(nil)
        })
    }
}

/// Why the link could not connect, for the log.
struct LinkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One opening's view of the warm link: its events until it ends.
final class LinkExchange: Sendable {
    let continuation: AsyncStream<AdapterEvent>.Continuation
    private let over = Mutex(false)

    init(continuation: AsyncStream<AdapterEvent>.Continuation) {
        self.continuation = continuation
    }

    func deliver(_ event: AdapterEvent) {
        over.withLock { over in
            if !over { continuation.yield(event) }
        }
    }

    /// Ends the exchange once, with a last event if given.
    func end(_ event: AdapterEvent?) {
        over.withLock { over in
            guard !over else { return }
            over = true
            if let event { continuation.yield(event) }
            continuation.finish()
        }
    }
}
