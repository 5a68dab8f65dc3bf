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
        let started = MonotonicClock.now()
        let deadline = started + .seconds(fromConfig: mqtt.timeout)
        let probe: BrokerProbe
        do {
            probe = try BrokerProbe(started: started, tls: mqtt.tls)
        } catch {
            return .setupFailed("cannot make a wake-up pipe: \(SystemError("pipe", code: error.code))")
        }
        if let failure = OSThread.detach({ probe.run(mqtt, password: password) }) {
            return .setupFailed(SystemError("pthread_create", code: failure).description)
        }
        // libmosquitto's connect blocks (DNS, TCP, TLS handshake) on the probe's thread;
        // past the budget that thread is left behind and the answer is "no answer".
        if !probe.settled.wait(until: deadline.nanoseconds) {
            probe.settle(.noAnswer)
        }
        // Let the thread say goodbye to the broker (DISCONNECT), briefly; one still stuck
        // inside libmosquitto's connect has nothing to say and is not waited for.
        if probe.isPastConnect {
            _ = probe.finished.wait(until: (MonotonicClock.now() + .milliseconds(500)).nanoseconds)
        }
        return probe.outcome ?? .noAnswer
    }
}
