import GateCore
import GateSystem
import Mosquitto
import Plumbing
import Synchronization

/// One CONNECT and its CONNACK, from the thread that owns the client.
final class BrokerProbe: Sendable {
    /// MOSQ_ERR_TLS of mosquitto.h: the handshake failed inside `mosquitto_connect`.
    static let tlsErrorCode: Int32 = 8

    let started: MonotonicInstant
    let tls: Bool
    /// Signalled once the outcome is known (by the broker, the library, or the budget).
    let settled: WakeSignal
    /// Signalled when the thread has let go of the client.
    let finished: WakeSignal
    private let result = Mutex<BrokerFacts?>(nil)
    /// Past libmosquitto's blocking connect: the thread will end (and disconnect) promptly.
    private let connectReturned = Mutex(false)
    private let connackSeen = Mutex(false)
    /// The library's last error log line: TLS failures are only described there.
    private let lastError = Mutex<String?>(nil)

    init(started: MonotonicInstant, tls: Bool) throws(WakeSignalError) {
        self.started = started
        self.tls = tls
        settled = try WakeSignal()
        finished = try WakeSignal()
    }

    var outcome: BrokerFacts? { result.withLock { $0 } }
    var isPastConnect: Bool { connectReturned.withLock { $0 } }

    /// The first outcome wins; later ones (a disconnect after a refusal) add nothing.
    func settle(_ facts: BrokerFacts) {
        let first = result.withLock { current -> Bool in
            guard current == nil else { return false }
            current = facts
            return true
        }
        if first { settled.signal() }
    }

    func run(_ mqtt: MQTTConfig, password: Secret?) {
        defer { finished.signal() }
        let client: MosquittoClient
        do {
            client = try MQTTStatusTopic.makeClient(config: mqtt, password: password) { [self] event in handle(event) }
        } catch {
            settle(.setupFailed("\(error)"))
            return
        }
        do throws(MosquittoError) {
            try client.connect(host: mqtt.host, port: Int32(mqtt.port), keepAlive: 60)
        } catch {
            let words = error.description + (lastError.withLock { $0 }.map { " (\($0))" } ?? "")
            settle(tls && error.code == Self.tlsErrorCode ? .tlsFailed(words) : .connectFailed(words))
            return
        }
        // Before the loop starts: the CONNACK it reads can settle the outcome at once,
        // and the caller must then already know to wait for the DISCONNECT below.
        connectReturned.withLock { $0 = true }
        do {
            try client.startLoop()
        } catch {
            settle(.connectFailed(error.description))
            return
        }
        // The budget is the caller's: it settles `.noAnswer` when it gives up, which ends this wait.
        _ = settled.wait(until: nil)
        client.disconnect()
        client.stopLoop(force: false)
    }

    /// Runs on libmosquitto's thread (and, for log lines, inside `connect`).
    private func handle(_ event: MosquittoEvent) {
        switch event {
        case .connected(let code):
            connackSeen.withLock { $0 = true }
            if code == 0 {
                settle(.accepted(MonotonicClock.now().duration(since: started)))
            } else {
                settle(.refused(code: code, words: MosquittoError.connackWords(for: code)))
            }
        case .disconnected(let code):
            guard code != 0 else { return }
            settle(.closed(lastError.withLock { $0 } ?? MosquittoError.words(for: code)))
        case .log(let level, let text):
            guard level == MosquittoLogLevel.error || level == MosquittoLogLevel.warning else { return }
            lastError.withLock { $0 = text }
            // A handshake that fails inside the network loop is only logged, with no
            // disconnect callback after it.
            if level == MosquittoLogLevel.error, tls, !connackSeen.withLock({ $0 }) {
                settle(.tlsFailed(text))
            }
        case .subscribed, .message, .published:
            break
        }
    }
}
