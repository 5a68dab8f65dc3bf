import CMosquitto
import Plumbing
import Synchronization

/// Owns one `struct mosquitto *` and frees it.
///
/// Events come from libmosquitto's own network thread (`mosquitto_loop_start`)
/// through the `@Sendable` handler given at creation, and nowhere else.
///
/// `@unchecked Sendable`: the handle is only touched through libmosquitto calls,
/// which take the library's own locks once the loop thread runs (the library
/// documents subscribe/publish/disconnect as safe from other threads); `deinit`
/// stops that thread before destroying the handle.
public final class MosquittoClient: @unchecked Sendable {
    public struct TLS: Sendable, Hashable {
        /// A PEM bundle of trusted CAs; `nil` uses the system's trust store.
        public var caFile: String?

        public init(caFile: String?) {
            self.caFile = caFile
        }
    }

    private let api: MosquittoAPI
    private let handle: OpaquePointer
    private let context: Unmanaged<CallbackContext>
    private let loopRunning = Atomic(false)
    public let clientID: String

    /// - Parameters:
    ///   - clientID: sent to the broker; clean session.
    ///   - handler: called on libmosquitto's thread for every event; must not block.
    public init(clientID: String, handler: @escaping @Sendable (MosquittoEvent) -> Void) throws(MosquittoError) {
        let api = try MosquittoLibrary.api()
        let context = Unmanaged.passRetained(CallbackContext(handler: handler))
        guard let handle = api.new(clientID, true, context.toOpaque()) else {
            context.release()
            throw MosquittoError(call: "mosquitto_new", code: gate_mosq_err_errno())
        }
        self.api = api
        self.handle = handle
        self.context = context
        self.clientID = clientID
        CallbackContext.install(on: handle, api: api)
    }

    deinit {
        if loopRunning.load(ordering: .acquiring) {
            _ = api.disconnect(handle)
            _ = api.loop_stop(handle, true)
        }
        api.destroy(handle)
        context.release()
    }

    /// Username and password for the CONNECT packet. libmosquitto keeps its own
    /// copy; the caller should wipe its bytes afterwards.
    /// - Parameter password: borrowed; handed over as a `WipedCString`.
    public func setCredentials(username: String, password: UnsafeBufferPointer<UInt8>?) throws(MosquittoError) {
        let code =
            if let password {
                WipedCString.with(password) { api.username_pw_set(handle, username, $0) }
            } else {
                api.username_pw_set(handle, username, nil)
            }
        try check("mosquitto_username_pw_set", code)
    }

    /// TLS with the peer's certificate and host name always verified.
    public func enableTLS(_ tls: TLS) throws(MosquittoError) {
        if let caFile = tls.caFile {
            try check("mosquitto_tls_set", api.tls_set(handle, caFile, nil, nil, nil, nil))
        } else {
            try check("mosquitto_int_option(TLS_USE_OS_CERTS)", api.int_option(handle, MOSQ_OPT_TLS_USE_OS_CERTS, 1))
        }
        // 1 = SSL_VERIFY_PEER; never insecure: the host name is checked against the certificate.
        try check("mosquitto_tls_opts_set", api.tls_opts_set(handle, 1, nil, nil))
        try check("mosquitto_tls_insecure_set", api.tls_insecure_set(handle, false))
    }

    /// The message the broker publishes for this client when it drops off without a
    /// DISCONNECT (killed, network gone). Set before `connect`.
    public func setWill(topic: String, payload: [UInt8], qos: Int32 = 1, retain: Bool) throws(MosquittoError) {
        let code = payload.withUnsafeBytes { bytes in
            api.will_set(handle, topic, Int32(bytes.count), bytes.baseAddress, qos, retain)
        }
        try check("mosquitto_will_set", code)
    }

    /// Backoff between automatic reconnections of the loop thread.
    public func setReconnectDelay(minimum: UInt32, maximum: UInt32) throws(MosquittoError) {
        try check("mosquitto_reconnect_delay_set", api.reconnect_delay_set(handle, minimum, maximum, true))
    }

    /// Connects (DNS, TCP, TLS handshake) and sends CONNECT, blocking until that is
    /// done or has failed; CONNACK arrives later as `.connected`. Call it from a
    /// thread of your own, never from Swift's cooperative pool.
    ///
    /// Blocking on purpose: with libmosquitto 2.0.11, `mosquitto_connect_async`
    /// over TLS to a port where nothing listens reports nothing and spins its
    /// thread (eclipse-mosquitto#2421, #2594), and TLS handshake failures in the
    /// loop only reach the log. A blocking connect reports both at once.
    public func connect(host: String, port: Int32, keepAlive: Int32 = 60) throws(MosquittoError) {
        try check("mosquitto_connect", api.connect(handle, host, port, keepAlive))
    }

    /// Starts libmosquitto's network thread, which also reconnects after a loss.
    public func startLoop() throws(MosquittoError) {
        try check("mosquitto_loop_start", api.loop_start(handle))
        loopRunning.store(true, ordering: .releasing)
    }

    /// Runs the network loop once on the caller's thread (instead of `startLoop`):
    /// waits up to `timeoutMs` for the socket, then reads, writes and keeps the
    /// connection alive; callbacks run inside this call. Returns libmosquitto's code:
    /// success, or why the connection is gone (reported to the handler as well).
    public func loopOnce(timeoutMs: Int32) -> Int32 {
        api.loop(handle, timeoutMs, 1)
    }

    /// The connection's socket (-1 when not connected), for a caller that waits on it
    /// together with descriptors of its own before calling `loopOnce`.
    public var socket: Int32 {
        api.socket(handle)
    }

    /// Stops the network thread (after a disconnect, or at once when `force`).
    public func stopLoop(force: Bool = true) {
        if loopRunning.exchange(false, ordering: .acquiringAndReleasing) { _ = api.loop_stop(handle, force) }
    }

    /// Sends every packet at once (`TCP_NODELAY`, before `connect`). With Nagle's
    /// algorithm the CONNECT waits for the ack of the TLS handshake's last flight and
    /// the trigger for the ack of the SUBSCRIBE: a round trip each, through a remote
    /// broker (docs/PERFORMANCE.md, the remote-broker benchmark).
    public func sendWithoutDelay() throws(MosquittoError) {
        try check("mosquitto_int_option(TCP_NODELAY)", api.int_option(handle, MOSQ_OPT_TCP_NODELAY, 1))
    }

    /// Speaks MQTT 5 instead of 3.1.1 (before `connect`): needed for subscription options.
    public func useMQTT5() throws(MosquittoError) {
        try check(
            "mosquitto_int_option(PROTOCOL_VERSION)",
            api.int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
        )
    }

    /// MQTT 5's "retain as published" (MQTT_SUB_OPT_RETAIN_AS_PUBLISHED of mqtt_protocol.h):
    /// a message published retained keeps its retain flag even when it reaches a client
    /// already subscribed (MQTT 3.1.1 clears it then). Needs `useMQTT5`.
    public func subscribeRetainAsPublished(topic: String, qos: Int32) throws(MosquittoError) -> Int32 {
        var messageID: Int32 = 0
        try check("mosquitto_subscribe_v5", api.subscribe_v5(handle, &messageID, topic, qos, 0x08, nil))
        return messageID
    }

    @discardableResult
    public func subscribe(topic: String, qos: Int32 = 0) throws(MosquittoError) -> Int32 {
        var messageID: Int32 = 0
        try check("mosquitto_subscribe", api.subscribe(handle, &messageID, topic, qos))
        return messageID
    }

    @discardableResult
    public func publish(
        topic: String,
        payload: [UInt8],
        qos: Int32 = 0,
        retain: Bool = false
    ) throws(MosquittoError) -> Int32 {
        var messageID: Int32 = 0
        let code = payload.withUnsafeBytes { bytes in
            api.publish(handle, &messageID, topic, Int32(bytes.count), bytes.baseAddress, qos, retain)
        }
        try check("mosquitto_publish", code)
        return messageID
    }

    public func disconnect() {
        _ = api.disconnect(handle)
    }

    private func check(_ call: String, _ code: Int32) throws(MosquittoError) {
        guard code == gate_mosq_err_success() else { throw MosquittoError(call: call, code: code) }
    }
}
