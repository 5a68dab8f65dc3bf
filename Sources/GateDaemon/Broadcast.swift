import Synchronization

/// One sender, any number of readers: each `subscribe()` is a stream of its own of what is
/// yielded from then on, ended by its reader (a service's run that ends cancels its
/// iteration). A service subscribes when its run begins, before it reads the state the
/// news is about (`DaemonContext.config`, the link), so that nothing falls between the two;
/// a service started again subscribes anew, and what came while it was stopped is in that
/// state.
final class Broadcast<Element: Sendable>: Sendable {
    private struct Readers {
        var next = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
    }

    private let buffering: AsyncStream<Element>.Continuation.BufferingPolicy
    private let readers = Mutex(Readers())

    init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy) {
        self.buffering = bufferingPolicy
    }

    /// A stream of every element yielded from now on; the newest `buffering` if its reader lags.
    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: buffering)
        let id = readers.withLock { readers in
            defer { readers.next += 1 }
            readers.continuations[readers.next] = continuation
            return readers.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.readers.withLock { _ = $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ element: Element) {
        for continuation in readers.withLock({ Array($0.continuations.values) }) {
            continuation.yield(element)
        }
    }
}
