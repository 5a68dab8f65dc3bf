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
/// Status messages go to the opening running in this process, whatever adapter
/// it uses (`StatusFeed`: evidence for its machine), or, when none runs, to
/// `onUnclaimed`: relay activity that no opening of this process caused.
/// Events arrive on libmosquitto's thread; only `Mutex`es and continuations are
/// shared with it.
public final class MQTTLink: StatusFeed {
    public let config: MQTTConfig
    let topic: MQTTStatusTopic
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
        /// The running opening's observer (`attach`).
        var observer: (@Sendable (RelayObserver.Report) -> Void)?
        /// The running opening's attempt through this link, told when the link drops.
        var attempt: AttemptTicket?
        /// When the last status was a `1` without its `0` yet.
        var activeSince: MonotonicInstant?
        var stopped = false
        var lastError: String?
    }

    public init(
        config: MQTTConfig, credentials: CredentialLookup, logger: Logger,
        onUnclaimed: @escaping @Sendable (_ payload: [UInt8], _ retained: Bool) -> Void
    ) throws(WakeSignalError) {
        self.config = config
        self.topic = MQTTStatusTopic(config: config)
        self.credentials = credentials
        self.logger = logger
        self.onUnclaimed = onUnclaimed
        self.wake = try WakeSignal()
    }

    var broker: String { topic.broker }

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
        let (client, attempt) = state.withLock { state -> (MosquittoClient?, AttemptTicket?) in
            state.stopped = true
            state.ready = false
            defer { state.client = nil; state.attempt = nil }
            return (state.client, state.attempt)
        }
        wake.signal()
        attempt?.report(.lost("the MQTT link to \(broker) was closed (configuration reloaded or daemon stopping)"))
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
            let client = try MQTTStatusTopic.makeClient(config: config, password: password) { [self] event in handle(event) }
            password = nil
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
            if MQTTStatusTopic.refused(granted: granted) {
                logger.error("\(topic.refusalWords)")
                return
            }
            state.withLock { $0.ready = true; $0.lastError = nil }
            logger.info("MQTT link up", metadata: ["broker": "\(broker)", "topic": "\(config.statusTopic)"])

        case .message(let name, let payload, let retained):
            guard name == config.statusTopic else { return }
            let report = topic.report(topic: name, payload: payload, retained: retained)
            let observer = state.withLock { state -> (@Sendable (RelayObserver.Report) -> Void)? in
                switch report {
                case .activated: state.activeSince = MonotonicClock.now()
                case .released: state.activeSince = nil
                case .invalid, nil: break
                }
                return state.observer
            }
            if let report, let observer {
                observer(report)
            } else if observer == nil {
                onUnclaimed(payload, retained)
            }

        case .disconnected(let code):
            let (attempt, stopped, detail) = state.withLock { state -> (AttemptTicket?, Bool, String?) in
                state.ready = false
                state.subscribeID = nil
                return (state.attempt, state.stopped, state.lastError)
            }
            guard code != 0, !stopped else { return }
            let words = detail ?? MosquittoError.words(for: code)
            logger.warning("MQTT link lost; reconnecting", metadata: ["broker": "\(broker)", "reason": "\(words)"])
            attempt?.report(.lost("lost the connection to MQTT broker at \(broker) (\(words))"))

        case .published:
            break
        }
    }

    /// Whether the relay is held by a cycle this link saw begin, for at most
    /// `RelayObserver.activeBound` (a lost `0` or a forged `1` must not keep the gate
    /// refused for the whole MQTT budget).
    public var relayActive: Bool {
        guard let since = state.withLock({ $0.activeSince }) else { return false }
        return MonotonicClock.now() < since + RelayObserver.activeBound
    }

    public func attach(_ observer: @escaping @Sendable (RelayObserver.Report) -> Void) -> AttemptCancel {
        state.withLock { $0.observer = observer }
        return AttemptCancel { [self] in
            state.withLock { $0.observer = nil; $0.attempt = nil }
        }
    }

    /// One trigger through the warm link; nil when the link is not ready, so that
    /// the caller can connect afresh instead. The answers come through the
    /// opening's `attach`ed observer, like any status message.
    func attempt(_ ticket: AttemptTicket) -> AttemptCancel? {
        let client = state.withLock { state -> MosquittoClient? in
            guard state.ready, !state.stopped, state.attempt == nil, state.observer != nil, let client = state.client else { return nil }
            state.attempt = ticket
            return client
        }
        guard let client else { return nil }
        ticket.doing("publishing through the MQTT link to \(broker)")
        var failure: MosquittoError?
        let sent = ticket.send {
            do throws(MosquittoError) {
                _ = try client.publish(topic: config.triggerTopic, payload: MQTTStatusTopic.triggerPayload(), qos: 0, retain: false)
            } catch {
                failure = error
            }
        }
        if let failure {
            ticket.report(.unreachable("cannot publish the trigger to \(config.triggerTopic) at \(broker): \(failure)"))
        }
        guard sent, failure == nil else {
            state.withLock { if $0.attempt?.attempt == ticket.attempt { $0.attempt = nil } }
            ticket.finish()
            return AttemptCancel {}
        }
        logger.debug("trigger published on the warm link", metadata: ["topic": "\(config.triggerTopic)"])
        let timer = Task {
            do {
                try await ticket.permit.clock.sleep(until: ticket.deadline)
            } catch {
                return
            }
            ticket.report(.deadlineReached)
            ticket.finish()
        }
        return AttemptCancel { [self] in
            timer.cancel()
            state.withLock { if $0.attempt?.attempt == ticket.attempt { $0.attempt = nil } }
        }
    }
}

/// Why the link could not connect, for the log.
struct LinkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The daemon's current link as a `StatusFeed` (a reload may replace the link).
public struct LinkStatusFeed: StatusFeed {
    let link: @Sendable () -> MQTTLink?

    public init(link: @escaping @Sendable () -> MQTTLink?) {
        self.link = link
    }

    public var relayActive: Bool { link()?.relayActive ?? false }

    public func attach(_ observer: @escaping @Sendable (RelayObserver.Report) -> Void) -> AttemptCancel {
        link()?.attach(observer) ?? AttemptCancel {}
    }
}
