import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
#endif

/// One request read from the control socket, with the connection to answer on.
/// Owns the connection's descriptor and closes it when let go.
public final class ControlConnection: Sendable {
    private let fd: Int32
    public let peer: PeerCredentials
    public let request: Result<ControlRequest, ControlRequestProblem>

    init(fd: Int32, peer: PeerCredentials, request: Result<ControlRequest, ControlRequestProblem>) {
        self.fd = fd
        self.peer = peer
        self.request = request
    }

    deinit {
        close(fd)
    }

    /// Never blocks: a client that went away or stopped reading misses the line, and
    /// what the daemon is doing goes on.
    @discardableResult
    public func send(_ reply: ControlReply) -> Bool {
        UnixStream.send(fd, line: reply.json.serialized())
    }

    /// Whether the client has closed its end (or shut down its writing): it no
    /// longer waits for this opening. A client keeps its end open until the result.
    public func clientHungUp() -> Bool {
        UnixStream.peerHungUp(fd)
    }
}
