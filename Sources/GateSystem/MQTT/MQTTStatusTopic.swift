import GateCore
import Mosquitto
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// What every MQTT session (`MQTTLink`, `MQTTOneShot`) needs of the broker:
/// its name in messages, the subscription's verdict, and which status messages
/// are relay news (docs/CONTRACT.md#protocol-over-mqtt). Written once for all.
public struct MQTTStatusTopic: Sendable {
    let config: MQTTConfig

    /// `host:port`, brackets around an IPv6 literal.
    var broker: String {
        config.host.contains(":") ? "[\(config.host)]:\(config.port)" : "\(config.host):\(config.port)"
    }

    /// A TLS client at a plaintext port (`tls = true`): OpenSSL's words for a peer that
    /// answers no handshake. mosquitto's plain listener hangs up ("unexpected eof");
    /// other servers answer bytes that are no TLS record ("wrong version number").
    static let plainPeerSigns = [
        "wrong version number", "packet length too long", "unexpected eof while reading", "unknown protocol",
        "record layer failure",
    ]

    /// The sentence for a handshake that failed because the port speaks no TLS, or nil
    /// when `detail` (the library's words) says something else.
    func plainPortWords(detail: String) -> String? {
        guard config.tls else { return nil }
        let lowered = detail.lowercased()
        guard Self.plainPeerSigns.contains(where: { lowered.contains($0) }) else { return nil }
        return "the broker at \(broker) does not speak TLS (set tls = false in [mqtt], or use its TLS port)"
    }

    /// The sentence for a broker certificate this client does not trust, or nil when
    /// `detail` (the library's words) says something else. OpenSSL's words stay in it:
    /// they name what failed.
    func untrustedCertificateWords(detail: String) -> String? {
        guard config.tls, detail.lowercased().contains("certificate verify failed") else { return nil }
        let trusted = config.caFile.map { "the CA in \($0) (ca_file in [mqtt])" } ?? "the system's CAs"
        return
            "the broker at \(broker) showed a certificate that \(trusted) does not vouch for (\(detail)); "
            + "set ca_file in [mqtt] to the CA that signed the broker's certificate, and check that host matches its name"
    }

    /// A TLS listener drops a plaintext CONNECT without a word: the connection closes
    /// before any CONNACK.
    var tlsPortWords: String {
        "the broker at \(broker) expects TLS on this port (set tls = true in [mqtt], or use its plain port)"
    }

    /// A SUBACK whose granted QoS is the failure code 0x80 (or missing): not authorised.
    static func refused(granted: [Int32]) -> Bool {
        granted.first.map { $0 > 2 } ?? true
    }

    var refusalWords: String {
        "MQTT broker at \(broker) refused the subscription to \(config.statusTopic) (not authorised for that topic?)"
    }

    /// The relay news in a message; nil for another topic or a retained message
    /// (whatever the relay did last time: stale by definition).
    func report(topic: String, payload: [UInt8], retained: Bool) -> RelayObserver.Report? {
        guard topic == config.statusTopic, !retained else { return nil }
        return RelayObserver.report(for: MQTTStatusDecoder.event(for: payload, topic: topic))
    }

    /// The trigger's payload: the current Unix time in seconds.
    static func triggerPayload() -> [UInt8] {
        Array(String(WallClock.nowNanoseconds() / 1_000_000_000).utf8)
    }

    /// `gate-` plus 8 random hex digits (docs/CONTRACT.md#protocol-over-mqtt).
    static func clientID(prefix: String) -> String {
        let value = UInt32.random(in: .min ... .max)
        let hex = String(value, radix: 16)
        return prefix + String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Why the broker cannot be reached by TCP before `deadline`, or nil when it
    /// answers. Sends nothing but a TCP handshake.
    func tcpSilence(until deadline: MonotonicInstant) -> String? {
        let addresses: [SocketAddress]
        switch HostResolver.addresses(host: config.host, port: config.port, socketType: Int32(SOCK_STREAM.rawValue)) {
        case .success(let found): addresses = found
        case .failure(let failure): return "cannot reach MQTT broker at \(broker): \(failure.message)"
        }
        var last = TCPConnect.Failure.timedOut
        for address in addresses {
            switch TCPConnect.open(to: address, until: deadline.nanoseconds) {
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

    /// A client with the configuration's credentials and TLS.
    public static func makeClient(
        config: MQTTConfig,
        password: Secret?,
        handler: @escaping @Sendable (MosquittoEvent) -> Void
    ) throws -> MosquittoClient {
        let client = try MosquittoClient(clientID: clientID(prefix: config.clientIDPrefix), handler: handler)
        try client.sendWithoutDelay()
        if let username = config.username {
            if let password {
                try password.withBytes { try client.setCredentials(username: username, password: $0) }
            } else {
                try client.setCredentials(username: username, password: nil)
            }
        }
        if config.tls {
            try client.enableTLS(.init(caFile: config.caFile))
        }
        return client
    }
}
