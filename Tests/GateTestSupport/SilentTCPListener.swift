import Foundation

/// A TCP port that completes the handshake (the kernel's backlog) and then says
/// nothing: a TLS handshake or an MQTT CONNECT sent there waits forever.
public final class SilentTCPListener {
    public let socket: LoopbackSocket
    public var fd: Int32 { socket.fd }
    public var port: UInt16 { socket.port }

    public init() throws {
        socket = try LoopbackSocket(.tcp, listen: 8)
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
