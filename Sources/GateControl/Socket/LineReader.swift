import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Reads lines from a non-blocking stream socket, waiting with `poll` until a deadline.
/// For a thread of its own (never one of Swift's pool).
struct LineReader {
    enum Line {
        case line([UInt8])
        /// The peer closed its end; what it had sent without a newline.
        case ended([UInt8])
        case tooLong
        case timedOut
        case failed(SystemError)
    }

    let fd: Int32
    let limit: Int
    private var buffer: [UInt8] = []

    init(fd: Int32, limit: Int) {
        self.fd = fd
        self.limit = limit
    }

    /// The next line (without its newline), waiting at most until `deadline`.
    mutating func next(until deadline: MonotonicInstant) -> Line {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                return line.count > limit ? .tooLong : .line(line)
            }
            if buffer.count > limit { return .tooLong }
            let count = retryingOnInterrupt { recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                continue
            }
            if count == 0 { return .ended(buffer) }
            let code = errno
            guard code == EAGAIN || code == EWOULDBLOCK else { return .failed(SystemError("recv", code: code)) }
            guard MonotonicClock.now() < deadline else { return .timedOut }
            var entries = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            if case .failure(let error) = Poll.wait(&entries, until: deadline.nanoseconds) { return .failed(error) }
        }
    }
}
