import Synchronization

/// One sender, any number of readers: each `subscribe()` is a stream of its own of what is
/// yielded from then on, ended by its reader (a service's run that ends cancels its
/// iteration). A service subscribes when its run begins, before it reads the state the
/// news is about (`DaemonContext.config`, the link), so that nothing falls between the two;
/// a service started again subscribes anew, and what came while it was stopped is in that
/// state. News that is no state (a SIGHUP) is kept instead while nobody reads (`keepingUnread`).
final class Broadcast<Element: Sendable>: Sendable {
    private struct Readers {
        var next = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        /// The newest element yielded while no reader listened, for the next one.
        var unread: Element?
    }

    private let buffering: AsyncStream<Element>.Continuation.BufferingPolicy
    private let keepingUnread: Bool
    private let readers = Mutex(Readers())

    init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy, keepingUnread: Bool = false) {
        self.buffering = bufferingPolicy
        self.keepingUnread = keepingUnread
    }

    /// A stream of every element yielded from now on; the newest `buffering` if its reader lags.
    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: buffering)
        let id = readers.withLock { readers in
            defer { readers.next += 1 }
            readers.continuations[readers.next] = continuation
            if let unread = readers.unread.take() { continuation.yield(unread) }
            return readers.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.readers.withLock { _ = $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ element: Element) {
        let continuations = readers.withLock { readers in
            if readers.continuations.isEmpty, keepingUnread { readers.unread = element }
            return Array(readers.continuations.values)
        }
        for continuation in continuations {
            continuation.yield(element)
        }
    }
}
