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

/// A TCP port on loopback that drops every new connection attempt, as a broker behind a
/// firewall or a host that went away does: its accept queue (backlog 0) is filled by one
/// connection nobody accepts, and the kernel then drops further SYNs, so a blocking
/// `connect(2)` to it waits until the kernel gives up (about two minutes).
public final class BlackholedTCPPort {
    public let listener: LoopbackSocket
    private let filler: Int32
    public var port: UInt16 { listener.port }

    public init() throws {
        listener = try LoopbackSocket(.tcp, listen: 0)
        filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard filler >= 0 else { throw LoopbackSocket.Failure("socket") }
        let address = try LoopbackSocket.Address(host: "127.0.0.1", port: listener.port)
        guard address.withSockaddr({ Glibc.connect(filler, $0, $1) }) == 0 else {
            close(filler)
            throw LoopbackSocket.Failure("connect to fill the accept queue of port \(listener.port)")
        }
    }

    deinit {
        close(filler)
    }
}
