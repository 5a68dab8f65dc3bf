import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `gate doctor`'s two looks at the broker, each bounded by `mqtt.timeout`: a bare
/// TCP connection, then an MQTT CONNECT (TLS when configured) up to the CONNACK.
/// Neither subscribes nor publishes: a doctor must never trigger the relay.
public enum DoctorBroker {
    /// Connects and closes at once, sending nothing.
    public static func tcp(_ mqtt: MQTTConfig) -> TCPFacts {
        let address: SocketAddress
        switch HostResolver.resolve(host: mqtt.host, port: mqtt.port) {
        case .success(let resolved): address = resolved
        case .failure(let failure): return .failed(failure.message)
        }
        let started = MonotonicClock.now()
        let deadline = started + .seconds(fromConfig: mqtt.timeout)
        switch TCPConnect.open(to: address, until: deadline.nanoseconds) {
        case .success(let fd):
            close(fd)
            return .connected(MonotonicClock.now().duration(since: started))
        case .failure(.timedOut):
            return .noAnswer
        case .failure(.failed(let error)):
            return .failed(error.description)
        }
    }

    /// Logs in as an opening would (same TLS settings, user and password) and
    /// disconnects after the CONNACK. `password` is used for the login only.
    public static func connect(_ mqtt: MQTTConfig, password: Secret?) -> BrokerFacts {
        switch MQTTOneShot.run(mqtt, password: password, timeout: .seconds(fromConfig: mqtt.timeout)) {
        case .success(let outcome): return .accepted(outcome.connackAfter)
        case .failure(let failure):
            switch failure.kind {
            case .setup: return .setupFailed(failure.detail)
            case .connect, .lost: return .connectFailed(failure.detail)
            case .tls: return .tlsFailed(failure.detail)
            case .refused(let code): return .refused(code: code, words: failure.detail)
            case .closed: return .closed(failure.detail)
            case .noConnack, .unacknowledged: return .noAnswer
            }
        }
    }
}
