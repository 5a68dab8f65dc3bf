import Glibc
import Plumbing

extension SocketAddress {
    /// Parses the forms `--udp` accepts: `A.B.C.D:PORT`, `[IPv6]:PORT` and `localhost:PORT`.
    /// Host names other than `localhost` are refused on purpose: the simulator binds
    /// a socket, and a name that resolves differently tomorrow would make tests flaky.
    init?(endpoint text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"),
                text[text.index(after: close)...].hasPrefix(":")
            else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            // An unbracketed IPv6 literal is ambiguous ("::1:8080"), so it is refused.
            if host.contains(":") { return nil }
        }
        guard portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
        let literal = host == "localhost" ? "127.0.0.1" : String(host)
        guard let address = SocketAddress(literal: literal, port: port) else { return nil }
        self = address
    }
}

/// The datagram socket, non-blocking and close-on-exec, bound to `address`.
/// Returns the descriptor and the address actually bound (the port chosen for port 0).
func bindUDPSocket(to address: SocketAddress) throws(SystemError) -> (fd: Int32, bound: SocketAddress) {
    let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SystemError("socket") }
    do throws(SystemError) {
        // No SO_REUSEADDR: for UDP it would let two simulators share a port silently,
        // and a test would then talk to the wrong one. UDP has no TIME_WAIT to skip anyway.
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0 else { throw SystemError("bind \(address)") }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutableBytes(of: &storage) { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        guard rc == 0 else { throw SystemError("getsockname") }
        guard let bound = SocketAddress(storage: storage) else { throw SystemError("getsockname", code: EAFNOSUPPORT) }
        return (fd, bound)
    } catch {
        close(fd)
        throw error
    }
}

/// Opens and closes a TCP connection to `host`:`port` (any address the name resolves to),
/// within `timeout`; nil on success, else the system's words for why not.
///
/// Used before a TLS connection to the broker: libmosquitto 2.0.11 reports nothing when the
/// TCP connect of `mosquitto_connect_async` is refused under TLS, and busy-loops until the
/// keep-alive expires (eclipse-mosquitto/mosquitto#2421), so without this a broker that is
/// down would surface as a vague timeout.
func tcpConnectFailure(host: String, port: Int, timeout: Duration) -> String? {
    let addresses: [SocketAddress]
    switch AddressLookup.addresses(
        host: host,
        port: UInt16(clamping: port),
        socketType: Int32(SOCK_STREAM.rawValue),
        onlyConfiguredFamilies: false
    ) {
    case .success(let found): addresses = found
    case .failure(let words): return words.description
    }
    let deadline = MonotonicNanoseconds.now() + UInt64(max(0, milliseconds(timeout))) * 1_000_000
    var failure = "no address"
    for address in addresses {
        switch TCPConnect.open(to: address, until: deadline) {
        case .success(let fd):
            close(fd)
            return nil
        case .failure(let error):
            failure = error.description
        }
    }
    return failure
}
