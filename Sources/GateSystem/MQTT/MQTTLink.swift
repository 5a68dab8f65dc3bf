import GateCore
import Logging
import Mosquitto
import Plumbing
import Synchronization

/// A connection to the broker subscribed to the status topic, through which MQTT
/// openings publish (`LinkAdapter`): the daemon's warm link (docs/CONTRACT.md#gate-daemon),
/// connected at start so that a button opening publishes without connecting first;
/// `gate open`'s, for the length of its opening; or the daemon's for one attempt.
/// Reconnects with backoff (1 s to 30 s).
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
    /// An opening attached to the link ended, with the echoes of its cycle still to come.
    let onOpeningEnded: @Sendable (RelayObserver.Echoes) -> Void
    /// A last will, more topics, and who hears of them (Home Assistant, docs/CONTRACT.md#home-assistant).
    public let extras: LinkExtras
    let onEvent: @Sendable (MQTTLink, LinkEvent) -> Void
    let state = Mutex(LinkState())
    let wake: WakeSignal
    /// Signalled by PUBACKs while `stop` waits for its goodbye's.
    let acknowledgement: WakeSignal
    /// Where the link counts its connection from connect to the end of its loop
    /// (`gate open` waits for its DISCONNECT before the process exits).
    let sessions: MQTTSessions?
    /// The level of "down; retrying" and "refused" lines: warnings for the daemon's
    /// link, info for an opening's own link (its opening's words say what it missed).
    let troubleLevel: Logger.Level
    /// Reach the broker with a plain TCP connection bounded by `config.timeout` before
    /// libmosquitto's own connect, which blocks until the kernel gives up (about two
    /// minutes) on a broker that drops packets: for the daemon's links of one attempt,
    /// which must not leave a thread behind per press.
    let tcpFirst: Bool

    struct LinkState {
        var client: MosquittoClient?
        /// SUBACK for the status topic seen on the current connection.
        var ready = false
        /// Counts the subscriptions made: each SUBACK starts a new session.
        var session: UInt64 = 0
        var subscribeID: Int32?
        /// The running opening's observer (`attach`).
        var observer: (@Sendable (RelayObserver.Report, Bool) -> Void)?
        /// The echoes the last attached opening still owes (`StatusFeed.attach`).
        var echoes = EchoLedger()
        /// The running opening's attempt through this link, told when the link drops.
        var attempt: AttemptTicket?
        /// When the last status was a `1` without its `0` yet.
        var activeSince: MonotonicInstant?
        var stopped = false
        /// `client`'s connect has returned: its socket is connected, so a DISCONNECT
        /// written to it cannot block (one written while the connect is still under way
        /// waits as long as the connect: minutes, to a blackholed broker).
        var connectReturned = false
        var lastError: String?
        /// Why the latest connection ended before the link was ready, in the words an
        /// opening reports; `failures` counts them.
        var failure: AdapterEvent?
        var failures = 0
        /// The current connection's failure is recorded: the disconnect that follows a
        /// refused CONNACK or a failed handshake adds nothing to its words.
        var failureSaid = false
        /// SUBSCRIBE message ids of `extras.subscriptions` on the current connection.
        var extraSubscribeIDs: [Int32: String] = [:]
        /// CONNACK accepted on the current connection.
        var connected = false
        /// PUBACKs seen while `stop` waits for its goodbye's.
        var acknowledged: Set<Int32>?
        /// `sync` calls waiting for the SUBACK of their SUBSCRIBE, by message id.
        var barriers: [Int32: (token: UInt64, continuation: CheckedContinuation<Bool, Never>)] = [:]
        var nextBarrier: UInt64 = 0
        /// Protocol v2: SUBSCRIBE message ids of `extras.v2`'s topics on this connection.
        var v2SubscribeIDs: Set<Int32> = []
        /// Protocol v2: the last payload on the epoch announcement's topic (retained or
        /// live), unchecked: whoever holds the key checks it (`V2Key.epoch`).
        var epochAnnouncement: [UInt8]?
        /// Protocol v2: the running opening's reader of `<status_topic>/v2`.
        var replyObserver: (@Sendable ([UInt8]) -> Void)?
    }

    public init(
        config: MQTTConfig,
        credentials: CredentialLookup,
        logger: Logger,
        extras: LinkExtras = LinkExtras(),
        sessions: MQTTSessions? = nil,
        troubleLevel: Logger.Level = .warning,
        tcpFirst: Bool = false,
        onEvent: @escaping @Sendable (MQTTLink, LinkEvent) -> Void = { _, _ in },
        onOpeningEnded: @escaping @Sendable (RelayObserver.Echoes) -> Void = { _ in },
        onUnclaimed: @escaping @Sendable (_ payload: [UInt8], _ retained: Bool) -> Void
    ) throws(WakeSignalError) {
        self.onOpeningEnded = onOpeningEnded
        self.config = config
        self.sessions = sessions
        self.troubleLevel = troubleLevel
        self.tcpFirst = tcpFirst
        self.extras = extras
        self.onEvent = onEvent
        self.topic = MQTTStatusTopic(config: config)
        self.credentials = credentials
        self.logger = logger
        self.onUnclaimed = onUnclaimed
        self.wake = try WakeSignal()
        self.acknowledgement = try WakeSignal()
    }

    var broker: String { topic.broker }

    /// Connected and subscribed: an opening can publish at once.
    public var isReady: Bool { state.withLock { $0.ready && !$0.stopped } }

    public var liveSession: UInt64? { state.withLock { $0.ready && !$0.stopped ? $0.session : nil } }

    /// A connection failed or was refused since the link started: not worth waiting for.
    var hasFailed: Bool { state.withLock { $0.failures > 0 } }

    /// Why the link is not ready, for an attempt that waited for it: the latest
    /// connection's failure, or what it was still waiting for.
    var notReadyEvent: AdapterEvent {
        let (failure, connected, lastError) = state.withLock { ($0.failure, $0.connected, $0.lastError) }
        if let failure { return failure }
        if connected {
            return .unreachable("MQTT broker at \(broker) did not acknowledge the subscription within the budget")
        }
        return .unreachable(connectFailure("no CONNACK within the budget\(lastError.map { " (\($0))" } ?? "")"))
    }

    /// The latest connection ended before the link was ready.
    private func failed(_ event: AdapterEvent) {
        state.withLock { state in
            state.failure = event
            state.failures += 1
            state.failureSaid = true
        }
    }

    /// Why connecting failed, in words: a TLS client at a plain port said so with its
    /// fix, an untrusted certificate with its fix, anything else with the library's words.
    private func connectFailure(_ detail: String) -> String {
        if let words = topic.untrustedCertificateWords(detail: detail) ?? topic.plainPortWords(detail: detail) {
            logger.info("TLS handshake failed", metadata: ["broker": "\(broker)", "detail": "\(detail)"])
            return words
        }
        return "cannot reach MQTT broker at \(broker): \(detail)"
    }

    /// CONNACK accepted on the current connection: `publish` can send.
    public var isConnected: Bool { state.withLock { $0.connected && !$0.stopped } }

    /// Starts connecting on a thread of its own (a blocking connect may take as long
    /// as the kernel's TCP timeout to a dead host; no opening waits for it).
    public func start() -> Int32? {
        OSThread.detach { [self] in connectLoop() }
    }

    /// Disconnects and ends the link's threads; an attempt still publishing through it is told
    /// the link went away. Safe to call more than once.
    public func stop() {
        // A clean DISCONNECT makes the broker drop the will: say it ourselves first, and
        // wait (briefly) until the broker has it, so that it cannot land after the
        // `online` (or the removal) of the link that replaces this one.
        if let will = extras.will { sayGoodbye(will) }
        let (client, attempt) = state.withLock { state -> (MosquittoClient?, AttemptTicket?) in
            state.stopped = true
            state.ready = false
            defer {
                state.client = nil
                state.attempt = nil
            }
            // A client still inside its connect is left to the connecting thread, which
            // sees `stopped` when the connect returns and closes it there.
            return (state.connectReturned ? state.client : nil, state.attempt)
        }
        wake.signal()
        endBarriers(where: { _ in true })
        attempt?.report(.lost("the MQTT link to \(broker) was closed (configuration reloaded or daemon stopping)"))
        if let client {
            client.disconnect()
            // libmosquitto's thread ends by itself once it sees the disconnect. It is joined
            // on a thread of its own, not cancelled (a pthread_cancel can stop it inside the
            // library's locks; ThreadSanitizer reported that at daemon stop), and the caller
            // does not wait: a reconnect in progress to an unreachable broker keeps that
            // thread in connect(2) until the kernel gives up. The client is freed after.
            OSThread.detach { [sessions] in
                client.stopLoop(force: false)
                sessions?.ended()
            }
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
                failed(reason.event)
                logger.log(
                    level: troubleLevel,
                    "MQTT link down; retrying",
                    metadata: [
                        "broker": "\(broker)", "reason": "\(reason)", "retry_in_s": "\(delay)",
                    ]
                )
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
            case .failure(let failure):
                logger.info("no usable MQTT password", metadata: ["looked": "\(failure.looked)"])
                return .failure(LinkFailure(.misconfigured(failure.message)))
            }
        }
        if tcpFirst, let silence = topic.tcpSilence(until: MonotonicClock.now() + .seconds(fromConfig: config.timeout))
        {
            return .failure(LinkFailure(.unreachable(silence)))
        }
        do {
            let client = try MQTTStatusTopic.makeClient(config: config, password: password) { [self] event in
                handle(event)
            }
            password = nil
            if extras.retainAsPublished {
                try client.useMQTT5()
            }
            if let will = extras.will {
                try client.setWill(topic: will.topic, payload: will.payload, qos: 1, retain: will.retain)
            }
            try client.setReconnectDelay(minimum: Self.minimumDelay, maximum: Self.maximumDelay)
            let installed = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.client = client
                state.connectReturned = false
                state.failureSaid = false
                return true
            }
            guard installed else { return .success(()) }
            logger.debug("MQTT link connecting", metadata: ["broker": "\(broker)", "client_id": "\(client.clientID)"])
            do {
                try client.connect(host: config.host, port: Int32(config.port), keepAlive: 60)
                let stopped = state.withLock { state -> Bool in
                    state.connectReturned = true
                    // Counted here, under the lock `stop` takes: from now on `stop`
                    // disconnects this client and ends the count.
                    if !state.stopped { sessions?.began() }
                    return state.stopped
                }
                if stopped {
                    client.disconnect()
                    return .success(())
                }
                do {
                    try client.startLoop()
                } catch {
                    sessions?.ended()
                    throw error
                }
            } catch {
                state.withLock { if $0.client === client { $0.client = nil } }
                let detail = state.withLock { $0.lastError }.map { " (\($0))" } ?? ""
                return .failure(LinkFailure(.unreachable(connectFailure("\(error)\(detail)"))))
            }
            return .success(())
        } catch {
            return .failure(LinkFailure(.unreachable("cannot set up the MQTT client for \(broker): \(error)")))
        }
    }

    private func waitForWake(milliseconds: Int32) {
        _ = wake.wait(until: milliseconds < 0 ? nil : MonotonicNanoseconds.now() + UInt64(milliseconds) * 1_000_000)
    }

    /// Runs on libmosquitto's thread.
    private func handle(_ event: MosquittoEvent) {
        switch event {
        case .log(let level, let text):
            logger.trace("libmosquitto", metadata: ["link": "mqtt", "text": "\(text)"])
            guard level == MosquittoLogLevel.error || level == MosquittoLogLevel.warning else { return }
            let connecting = state.withLock { state -> Bool in
                state.lastError = text
                return !state.connected && state.client != nil
            }
            // A TLS handshake that fails inside the network loop is only logged: no
            // disconnect callback follows.
            if connecting, level == MosquittoLogLevel.error { failed(.unreachable(connectFailure(text))) }
        case .connected(let code):
            connected(code)
        case .subscribed(let messageID, let granted):
            subscribed(messageID, granted: granted)
        case .message(let name, let payload, let retained):
            received(name, payload: payload, retained: retained)
        case .disconnected(let code):
            disconnected(code)
        case .published(let id):
            let waiting = state.withLock { state -> Bool in
                guard state.acknowledged != nil else { return false }
                state.acknowledged?.insert(id)
                return true
            }
            if waiting { acknowledgement.signal() }
        }
    }

    /// The broker's CONNACK: when accepted, protocol v2's topics, the status topic and
    /// the extras are subscribed.
    private func connected(_ code: Int32) {
        guard code == 0 else {
            failed(
                .unreachable(
                    "MQTT broker at \(broker) refused the connection: \(MosquittoError.connackWords(for: code))"
                )
            )
            logger.log(
                level: troubleLevel,
                "MQTT broker refused the link; retrying",
                metadata: [
                    "broker": "\(broker)", "reason": "\(MosquittoError.connackWords(for: code))",
                ]
            )
            return
        }
        let client = state.withLock { $0.client }
        subscribeV2(client)
        do {
            let id = try client.map { try $0.subscribe(topic: config.statusTopic, qos: 0) }
            state.withLock { $0.subscribeID = id }
        } catch {
            failed(.unreachable("cannot subscribe to \(config.statusTopic) at \(broker): \(error)"))
            logger.warning(
                "MQTT link cannot subscribe",
                metadata: ["topic": "\(config.statusTopic)", "error": "\(error)"]
            )
        }
        var extraIDs: [Int32: String] = [:]
        for topic in extras.subscriptions {
            do {
                let id = try client.map { client in
                    try extras.retainAsPublished
                        ? client.subscribeRetainAsPublished(topic: topic, qos: 1)
                        : client.subscribe(topic: topic, qos: 1)
                }
                if let id { extraIDs[id] = topic }
            } catch {
                logger.warning("MQTT link cannot subscribe", metadata: ["topic": "\(topic)", "error": "\(error)"])
            }
        }
        state.withLock {
            $0.extraSubscribeIDs = extraIDs
            $0.connected = true
        }
        onEvent(self, .connected)
    }

    /// A SUBACK: a barrier's (`sync`), v2's, an extra's, or the status topic's, which
    /// makes the link ready and starts a new watch session.
    private func subscribed(_ messageID: Int32, granted: [Int32]) {
        if let barrier = state.withLock({ $0.barriers.removeValue(forKey: messageID) }) {
            barrier.continuation.resume(returning: true)
            return
        }
        if state.withLock({ $0.v2SubscribeIDs.remove(messageID) }) != nil {
            if MQTTStatusTopic.refused(granted: granted) {
                logger.error("MQTT broker at \(broker) refused a protocol v2 subscription (not authorised for it?)")
            }
            return
        }
        let (expected, extra) = state.withLock { ($0.subscribeID == messageID, $0.extraSubscribeIDs[messageID]) }
        if let extra {
            if MQTTStatusTopic.refused(granted: granted) {
                logger.error(
                    "MQTT broker at \(broker) refused the subscription to \(extra) (not authorised for that topic?)"
                )
            }
            onEvent(self, .subscribed(topic: extra, refused: MQTTStatusTopic.refused(granted: granted)))
            return
        }
        guard expected else { return }
        if MQTTStatusTopic.refused(granted: granted) {
            failed(.unreachable(topic.refusalWords))
            logger.log(level: troubleLevel, "\(topic.refusalWords)")
            return
        }
        state.withLock {
            $0.ready = true
            $0.session += 1
            $0.lastError = nil
            $0.failure = nil
        }
        logger.info("MQTT link up", metadata: ["broker": "\(broker)", "topic": "\(config.statusTopic)"])
    }

    /// A message: v2's replies and epoch, an extra's, or the status topic's report, told
    /// apart from an echo of a local cycle and handed to the attached opening.
    private func received(_ name: String, payload: [UInt8], retained: Bool) {
        if handleV2(topic: name, payload: payload, retained: retained) { return }
        guard name == config.statusTopic else {
            if extras.subscriptions.contains(name) {
                onEvent(self, .message(topic: name, payload: payload, retained: retained))
            }
            return
        }
        let report = topic.report(topic: name, payload: payload, retained: retained)
        if retained { logger.debug("retained status ignored", metadata: ["topic": "\(name)"]) }
        typealias Delivery = (observer: (@Sendable (RelayObserver.Report, Bool) -> Void)?, echo: Bool)
        let (observer, echo) = state.withLock { state -> Delivery in
            let echo = report.map { state.echoes.take($0, at: MonotonicClock.now()) } ?? false
            switch report {
            // A late echo of a local cycle that already ended does not hold the relay.
            case .activated: if !echo { state.activeSince = MonotonicClock.now() }
            case .released: state.activeSince = nil
            case .invalid, nil: break
            }
            // Under the lock, in order with an opening's end (`attach`).
            if state.observer == nil { onUnclaimed(payload, retained) }
            return (state.observer, echo)
        }
        if let report, let observer {
            observer(report, echo)
        }
    }

    /// The connection ended: the link is no longer ready, and an attempt that publishes
    /// through it hears that it was lost.
    private func disconnected(_ code: Int32) {
        let (attempt, stopped, detail, phase, said) = state.withLock { state in
            defer {
                state.failureSaid = false
                state.ready = false
                state.connected = false
                state.subscribeID = nil
            }
            return (state.attempt, state.stopped, state.lastError, (state.connected, state.ready), state.failureSaid)
        }
        endBarriers(where: { _ in true })
        guard code != 0, !stopped else { return }
        let words = detail ?? MosquittoError.words(for: code)
        switch phase {
        case _ where said:
            break
        case (false, _) where !config.tls:
            // A TLS listener drops a plaintext CONNECT without a word.
            logger.info(
                "the connection closed before the CONNACK",
                metadata: ["broker": "\(broker)", "detail": "\(words)"]
            )
            failed(.unreachable(topic.tlsPortWords))
        case (_, false):
            failed(.unreachable("lost the connection to MQTT broker at \(broker) (\(words))"))
        case (_, true):
            break
        }
        logger.log(
            level: troubleLevel,
            "MQTT link lost; reconnecting",
            metadata: ["broker": "\(broker)", "reason": "\(words)"]
        )
        attempt?.report(.lost("lost the connection to MQTT broker at \(broker) (\(words))"))
    }
    /// Waits until every message the broker sent on this link before now has been
    /// handed on (to the attached opening, or as unclaimed): the broker answers a
    /// SUBSCRIBE after everything it wrote before it, and the library hands packets on
    /// in order. For a process that was not scheduled for a while (paused, a busy Pi):
    /// what the broker sent meanwhile waits in the socket, unread. False when the link
    /// is not up, or no SUBACK came within `timeout`.
    public func sync(timeout: Duration) async -> Bool {
        let token = state.withLock { state -> UInt64 in
            state.nextBarrier += 1
            return state.nextBarrier
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.barrier(token) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                self.endBarriers(where: { $0 == token })
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Subscribes again to the status topic and waits for its SUBACK. A re-subscription
    /// changes nothing: the subscription stays, and the retained message it brings is
    /// ignored like any retained status.
    private func barrier(_ token: UInt64) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            // Under the lock the SUBACK's handler takes: it cannot come before the wait is
            // registered.
            let registered = state.withLock { state -> Bool in
                guard state.ready, !state.stopped, let client = state.client,
                    let id = try? client.subscribe(topic: config.statusTopic, qos: 0)
                else { return false }
                state.barriers[id] = (token, continuation)
                return true
            }
            if !registered { continuation.resume(returning: false) }
        }
    }

    /// Ends the `sync` waits whose token `condition` picks (a timeout: its own; a lost
    /// connection or a stop: all), each answered false.
    private func endBarriers(where condition: (UInt64) -> Bool) {
        let ended = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            let ids = state.barriers.filter { condition($0.value.token) }.map(\.key)
            return ids.compactMap { state.barriers.removeValue(forKey: $0)?.continuation }
        }
        for continuation in ended { continuation.resume(returning: false) }
    }

    /// Publishes through the link (QoS 1); false when it is not connected, or the
    /// library refused the message (logged).
    @discardableResult
    public func publish(_ message: OutgoingMessage) -> Bool {
        publishID(message) != nil
    }

    private func publishID(_ message: OutgoingMessage) -> Int32? {
        let client = state.withLock { state -> MosquittoClient? in
            guard state.connected, !state.stopped else { return nil }
            return state.client
        }
        guard let client else { return nil }
        do {
            return try client.publish(topic: message.topic, payload: message.payload, qos: 1, retain: message.retain)
        } catch {
            logger.warning("MQTT link cannot publish", metadata: ["topic": "\(message.topic)", "error": "\(error)"])
            return nil
        }
    }

    /// Publishes `message` and waits up to 2 s for the broker's PUBACK.
    private func sayGoodbye(_ message: OutgoingMessage) {
        state.withLock { $0.acknowledged = [] }
        defer { state.withLock { $0.acknowledged = nil } }
        guard let id = publishID(message) else { return }
        let deadline = MonotonicClock.now() + .seconds(2)
        while !state.withLock({ $0.acknowledged?.contains(id) ?? true }) {
            let now = MonotonicClock.now()
            guard now < deadline, state.withLock({ $0.connected }) else {
                logger.warning("MQTT link: the broker did not acknowledge \(message.topic) before the link closed")
                return
            }
            if acknowledgement.wait(until: deadline.nanoseconds) { acknowledgement.clear() }
        }
    }

    /// Protocol v2's topics, subscribed before the status topic: the broker sends the
    /// retained epoch announcement before the status topic's SUBACK, so a link that is
    /// ready has it (docs/CONTRACT.md#protocol-v2-openings).
    private func subscribeV2(_ client: MosquittoClient?) {
        guard let v2 = extras.v2, let client else { return }
        var ids: Set<Int32> = []
        for topic in [v2.epoch, v2.replies] {
            do {
                ids.insert(try client.subscribe(topic: topic, qos: 0))
            } catch {
                logger.warning("MQTT link cannot subscribe", metadata: ["topic": "\(topic)", "error": "\(error)"])
            }
        }
        state.withLock { $0.v2SubscribeIDs = ids }
    }

    /// A message on a protocol v2 topic: the epoch announcement is kept, a live reply goes
    /// to the running opening. True when the topic was one of them.
    private func handleV2(topic: String, payload: [UInt8], retained: Bool) -> Bool {
        guard let v2 = extras.v2 else { return false }
        if topic == v2.epoch {
            state.withLock { $0.epochAnnouncement = payload }
            return true
        }
        guard topic == v2.replies else { return false }
        // A retained reply is stale by definition (and only the ESP32 may publish there).
        guard !retained, let observer = state.withLock({ $0.replyObserver }) else { return true }
        observer(payload)
        return true
    }

    /// Protocol v2: the last epoch announcement seen for the link's key id, unchecked.
    public var epochAnnouncement: [UInt8]? { state.withLock { $0.epochAnnouncement } }

    /// Protocol v2: every live message on `<status_topic>/v2` goes to `observer` until the
    /// returned function is called.
    public func attachReplies(_ observer: @escaping @Sendable ([UInt8]) -> Void) -> @Sendable () -> Void {
        state.withLock { $0.replyObserver = observer }
        return { [self] in state.withLock { $0.replyObserver = nil } }
    }

    /// Protocol v2: publishes a request (a status query) at QoS 0, never retained
    /// (PROTOCOL-V2.md, "Transports"); false when the link is not up or the library refused.
    public func publishRequest(topic: String, payload: [UInt8]) -> Bool {
        let client = state.withLock { state -> MosquittoClient? in
            guard state.ready, !state.stopped else { return nil }
            return state.client
        }
        guard let client else { return false }
        do {
            _ = try client.publish(topic: topic, payload: payload, qos: 0, retain: false)
            return true
        } catch {
            logger.warning("MQTT link cannot publish", metadata: ["topic": "\(topic)", "error": "\(error)"])
            return false
        }
    }

    /// Whether the relay is held by a cycle this link saw begin, for at most
    /// `RelayObserver.activeBound` (a lost `0` or a forged `1` must not keep the gate
    /// refused for the whole MQTT budget).
    public var relayActive: Bool {
        guard let since = state.withLock({ $0.activeSince }) else { return false }
        return MonotonicClock.now() < since + RelayObserver.activeBound
    }

    public func attach(_ observer: @escaping @Sendable (RelayObserver.Report, Bool) -> Void) -> StatusFeedAttachment {
        state.withLock { $0.observer = observer }
        return StatusFeedAttachment { [self] echoes in
            // Under the lock the message handler takes: the news of the end is in order
            // with every message after it.
            state.withLock {
                $0.observer = nil
                $0.attempt = nil
                $0.echoes.expect(echoes, endedAt: MonotonicClock.now())
                onOpeningEnded(echoes)
            }
        }
    }

    /// One trigger through the warm link; nil when the link is not ready, so that
    /// the caller can connect afresh instead. The answers come through the
    /// opening's `attach`ed observer, like any status message.
    func attempt(_ ticket: AttemptTicket, request: (topic: String, payload: [UInt8])? = nil) -> AttemptCancel? {
        let client = state.withLock { state -> MosquittoClient? in
            guard state.ready, !state.stopped, state.attempt == nil, state.observer != nil, let client = state.client
            else { return nil }
            state.attempt = ticket
            return client
        }
        guard let client else { return nil }
        ticket.doing("publishing through the MQTT link to \(broker)")
        var failure: MosquittoError?
        let topic = request?.topic ?? config.triggerTopic
        let sent = ticket.send {
            do throws(MosquittoError) {
                _ = try client.publish(
                    topic: topic,
                    payload: request?.payload ?? MQTTStatusTopic.triggerPayload(),
                    qos: 0,
                    retain: false
                )
            } catch {
                failure = error
            }
        }
        if let failure {
            ticket.report(.unreachable("cannot publish the trigger to \(topic) at \(broker): \(failure)"))
        }
        guard sent, failure == nil else {
            state.withLock { if $0.attempt?.attempt == ticket.attempt { $0.attempt = nil } }
            ticket.finish()
            return AttemptCancel {}
        }
        logger.debug("trigger published through the MQTT link", metadata: ["topic": "\(topic)"])
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
