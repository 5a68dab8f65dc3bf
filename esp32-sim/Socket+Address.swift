import Glibc

/// A failed system call, with the words the C library has for its errno.
struct SystemError: Error, CustomStringConvertible {
    let operation: String
    let code: Int32

    init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }

    var description: String { "\(operation): \(String(cString: strerror(code)))" }
}

/// An IP address and port kept in the kernel's own form, so that a reply goes back
/// to exactly the address and port the datagram came from (IPv4, IPv6 or v4-mapped).
struct SocketAddress: Sendable, CustomStringConvertible {
    private(set) var storage = sockaddr_storage()
    private(set) var length: socklen_t

    var family: Int32 { Int32(storage.ss_family) }

    /// Wraps what `recvfrom`/`getsockname` filled in.
    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

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

    /// An IPv4 or IPv6 literal (no brackets) and a port.
    init?(literal: String, port: UInt16) {
        var storage = sockaddr_storage()
        if literal.contains(":") {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, literal, &sin6.sin6_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: sin6) { raw.copyMemory(from: $0) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            guard inet_pton(AF_INET, literal, &sin.sin_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: sin) { raw.copyMemory(from: $0) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }

    var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            switch family {
            case AF_INET: UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in.self).sin_port)
            case AF_INET6: UInt16(bigEndian: raw.loadUnaligned(as: sockaddr_in6.self).sin6_port)
            default: 0
            }
        }
    }

    /// The address without the port. A v4-mapped IPv6 address (a v4 client talking to a
    /// `[::]` socket) is shown as plain IPv4, which is what the client itself would call it.
    var host: String {
        withUnsafeBytes(of: storage) { raw -> String in
            switch family {
            case AF_INET:
                let address = raw.loadUnaligned(as: sockaddr_in.self).sin_addr
                return withUnsafeBytes(of: address) { Self.presentation(AF_INET, $0) }
            case AF_INET6:
                let address = raw.loadUnaligned(as: sockaddr_in6.self).sin6_addr
                let bytes = withUnsafeBytes(of: address) { Array($0) }
                if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
                    return bytes[12...].map(String.init).joined(separator: ".")
                }
                return bytes.withUnsafeBytes { Self.presentation(AF_INET6, $0) }
            default:
                return "?"
            }
        }
    }

    /// `127.0.0.1:5555` or `[::1]:5555`: the form `--udp` accepts and the trigger log records.
    var description: String {
        let host = self.host
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func presentation(_ family: Int32, _ address: UnsafeRawBufferPointer) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(family, address.baseAddress, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Runs `body` with the address as the `sockaddr` pointer the socket calls want.
    func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result) rethrows -> Result {
        try withUnsafeBytes(of: storage) { raw in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}

/// The datagram socket, non-blocking and close-on-exec, bound to `address`.
/// Returns the descriptor and the address actually bound (the port chosen for port 0).
func bindUDPSocket(to address: SocketAddress) throws(SystemError) -> (fd: Int32, bound: SocketAddress) {
    let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SystemError("socket") }
    // No SO_REUSEADDR: for UDP it would let two simulators share a port silently,
    // and a test would then talk to the wrong one. UDP has no TIME_WAIT to skip anyway.
    guard address.withSockaddr({ bind(fd, $0, $1) }) == 0 else {
        let error = SystemError("bind \(address)")
        close(fd)
        throw error
    }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let rc = withUnsafeMutableBytes(of: &storage) { raw in
        getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
    }
    guard rc == 0 else {
        let error = SystemError("getsockname")
        close(fd)
        throw error
    }
    return (fd, SocketAddress(storage: storage, length: length))
}

/// Opens and closes a TCP connection to `host`:`port` (any address the name resolves to),
/// within `timeout`; nil on success, else the system's words for why not.
///
/// Used before a TLS connection to the broker: libmosquitto 2.0.11 reports nothing when the
/// TCP connect of `mosquitto_connect_async` is refused under TLS, and busy-loops until the
/// keep-alive expires (eclipse-mosquitto/mosquitto#2421), so without this a broker that is
/// down would surface as a vague timeout.
func tcpConnectFailure(host: String, port: Int, timeout: Duration) -> String? {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &list)
    guard rc == 0 else { return String(cString: gai_strerror(rc)) }
    defer { freeaddrinfo(list) }

    let deadline = ContinuousClock.now + timeout
    var failure = "no address"
    var entry = list
    while let info = entry?.pointee {
        entry = info.ai_next
        let fd = socket(info.ai_family, info.ai_socktype | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), info.ai_protocol)
        guard fd >= 0 else {
            failure = String(cString: strerror(errno))
            continue
        }
        defer { close(fd) }
        var code: Int32 = connect(fd, info.ai_addr, info.ai_addrlen) == 0 ? 0 : errno
        if code == EINPROGRESS {
            let left = deadline - ContinuousClock.now
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            if left > .zero && poll(&pfd, 1, Int32(max(1, milliseconds(left)))) == 1 {
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            } else {
                code = ETIMEDOUT
            }
        }
        if code == 0 { return nil }
        failure = String(cString: strerror(code))
    }
    return failure
}
