#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The one non-blocking TCP connect: bounded by a deadline, so that a host that
/// drops packets cannot hold the caller until the kernel gives up.
public enum TCPConnect {
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// Nothing answered before the deadline.
        case timedOut
        case failed(SystemError)

        public var description: String {
            switch self {
            case .timedOut: "no answer in time"
            case .failed(let error): error.description
            }
        }
    }

    /// A connected, non-blocking, close-on-exec stream socket to `address`; the caller owns it.
    public static func open(to address: SocketAddress, until deadline: UInt64) -> Result<Int32, Failure> {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.failed(SystemError("socket"))) }
        /// Closes the socket; `failure` (and the errno it holds) is made before.
        func fail(_ failure: Failure) -> Result<Int32, Failure> {
            close(fd)
            return .failure(failure)
        }
        if address.withSockaddr({ connect(fd, $0, $1) }) == 0 { return .success(fd) }
        let started = errno
        guard started == EINPROGRESS || started == EINTR else {
            return fail(.failed(SystemError("connect", code: started)))
        }
        guard Poll.wait(for: fd, events: Int16(POLLOUT), until: deadline) else { return fail(.timedOut) }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else {
            return fail(.failed(SystemError("getsockopt")))
        }
        guard code == 0 else { return fail(.failed(SystemError("connect", code: code))) }
        return .success(fd)
    }
}
