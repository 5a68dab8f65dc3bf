import CGPIOD
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads `struct gpioevent_data` records from an fd on a thread of its own and
/// hands them to Swift as `edges`.
///
/// Any fd works (a line's event fd, or a pipe that tests and the daemon's test
/// harness fill with recorded events), because every record is read with
/// libgpiod's own `gpiod_line_event_read_fd`. The thread polls the fd together
/// with a self-pipe, so `stop()` ends it at once even while no edge comes; it is
/// a pthread because it blocks in `poll`, which the cooperative pool must never do.
///
/// The stream finishes when the reader stops, the input ends or a read fails;
/// `ending` then says which (an `AsyncStream` carries no error).
public final class EdgeReader: Sendable {
    public enum Ending: Sendable, Hashable {
        /// `stop()` was called, or the stream's consumer went away.
        case stopped
        /// The writer of a pipe closed it, every whole record read.
        case endOfInput
        /// A read or wait failed; for a partial record, `call` is
        /// `gpiod_line_event_read_fd` and `code` EIO.
        case failed(GPIOError)
    }

    public let edges: AsyncStream<Edge>
    private let wake: WakeSignal
    /// Shared with the thread, which sets it once (Mutex cannot be captured itself).
    private let outcome: Outcome

    /// Starts reading `fd`, which the caller keeps open until the stream finishes.
    public convenience init(fd: Int32) throws(GPIOError) {
        try self.init(fd: fd, keepingAlive: nil)
    }

    /// Starts reading `fd`, which it closes once the stream finished (a FIFO the daemon
    /// opens again after a failure).
    public convenience init(owning fd: Int32) throws(GPIOError) {
        try self.init(fd: fd, keepingAlive: OwnedDescriptor(fd))
    }

    /// Closes its descriptor when the reading thread lets it go.
    private final class OwnedDescriptor: Sendable {
        let fd: Int32
        init(_ fd: Int32) { self.fd = fd }
        deinit { close(fd) }
    }

    /// Starts reading the line's events; the line stays open until the stream finishes.
    public convenience init(line: ButtonLine) throws(GPIOError) {
        try self.init(fd: line.eventFD, keepingAlive: line)
    }

    private init(fd: Int32, keepingAlive owner: (any AnyObject & Sendable)?) throws(GPIOError) {
        let context = "cannot read button events from fd \(fd)"
        let wake: WakeSignal
        do {
            wake = try WakeSignal()
        } catch {
            throw GPIOError(context, call: "pipe", code: error.code)
        }
        // Unbounded: edges are few and the consumer is always draining; dropping
        // one would lose the line's last level.
        let (stream, continuation) = AsyncStream.makeStream(of: Edge.self, bufferingPolicy: .unbounded)
        let outcome = Outcome()
        self.edges = stream
        self.wake = wake
        self.outcome = outcome
        continuation.onTermination = { _ in wake.signal() }
        let failure = OSThread.detach {
            let ending = EdgeReader.readLoop(fd: fd, wake: wake, into: continuation)
            // Set before finishing, so a consumer whose loop just ended sees it.
            outcome.value.withLock { $0 = ending }
            continuation.finish()
            withExtendedLifetime(owner) {}
        }
        if let failure {
            continuation.finish()
            throw GPIOError("cannot start the button event reader", call: "pthread_create", code: failure)
        }
    }

    /// Ends the reading thread and the stream promptly; safe from any thread, repeatedly.
    public func stop() {
        wake.signal()
    }

    /// Why the stream finished; nil while it runs.
    public var ending: Ending? {
        outcome.value.withLock { $0 }
    }

    private final class Outcome: Sendable {
        let value = Mutex<Ending?>(nil)
    }

    private static func readLoop(
        fd: Int32,
        wake: WakeSignal,
        into continuation: AsyncStream<Edge>.Continuation
    ) -> Ending {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            if case .failure(let error) = Poll.wait(&fds, until: nil) {
                return .failed(GPIOError("cannot wait for button events on fd \(fd)", call: "poll", code: error.code))
            }
            // The wake-up first: stopping must not wait for a busy line to go quiet.
            if fds[1].revents != 0 { return .stopped }
            let ready = Int32(fds[0].revents)
            if ready & POLLIN != 0 {
                var event = gpiod_line_event()
                guard gpiod_line_event_read_fd(fd, &event) == 0 else {
                    let code = errno
                    if code == EINTR || code == EAGAIN { continue }
                    // EIO here is a partial record (or EOF inside one): later bytes
                    // would be misaligned, so the stream ends with the failure.
                    return .failed(
                        GPIOError(
                            "cannot read a whole 16-byte button event record from fd \(fd)",
                            call: "gpiod_line_event_read_fd",
                            code: code
                        )
                    )
                }
                let ns = UInt64(event.ts.tv_sec) &* 1_000_000_000 &+ UInt64(event.ts.tv_nsec)
                // libgpiod 1.6 maps kernel id 1 to rising and every other id to falling.
                let kind: Edge.Kind = event.event_type == gate_gpiod_event_rising() ? .rising : .falling
                continuation.yield(Edge(kind, at: ns))
            } else if ready & POLLHUP != 0 {
                // POLLHUP without POLLIN: a pipe's writer closed it and nothing is left.
                return .endOfInput
            } else if ready & (POLLERR | POLLNVAL) != 0 {
                return .failed(
                    GPIOError(
                        "cannot wait for button events on fd \(fd)",
                        call: "poll",
                        words: ready & POLLNVAL != 0 ? "not an open fd" : "the fd reported an error"
                    )
                )
            }
        }
    }
}
