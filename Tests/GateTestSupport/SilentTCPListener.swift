import Foundation

/// A TCP port that completes the handshake (the kernel's backlog) and then says
/// nothing: a TLS handshake or an MQTT CONNECT sent there waits forever.
public final class SilentTCPListener {
    public let fd: Int32
    public let port: UInt16

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, ok else {
            close(fd)
            throw GateRunner.Failure("cannot listen: \(errno)")
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        close(fd)
    }
}

extension SilentTCPListener {
    /// Accepts the first connection on a thread of its own, reads what the client
    /// sends first, answers `bytes` and keeps the connection until the client closes
    /// it: a server that is not the broker the client expects.
    public func answerFirstConnection(with bytes: [UInt8]) {
        let listener = fd
        Thread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            guard buffer.withUnsafeMutableBytes({ recv(connection, $0.baseAddress, $0.count, 0) }) > 0 else { return }
            _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            while buffer.withUnsafeMutableBytes({ recv(connection, $0.baseAddress, $0.count, 0) }) > 0 {}
        }.start()
    }
}
