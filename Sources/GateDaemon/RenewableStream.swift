import Synchronization

/// A stream from the context to one service that outlives the service's run: when its
/// consumer goes away (a service that stopped and is started again by
/// `SupervisedService` cancels the task that read it, which ends an `AsyncStream` for
/// good), a fresh stream takes its place at once, so the service's next run reads
/// what is yielded from then on. Nothing yielded in between is lost: it waits in the
/// fresh stream (the newest `buffered` elements).
final class RenewableStream<Element: Sendable>: Sendable {
    private struct Current: Sendable {
        var stream: AsyncStream<Element>
        var continuation: AsyncStream<Element>.Continuation
        var generation: Int
    }

    private let buffering: AsyncStream<Element>.Continuation.BufferingPolicy
    private let current: Mutex<Current?>

    init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy) {
        self.buffering = bufferingPolicy
        self.current = Mutex(nil)
        current.withLock { $0 = makeStream(generation: 0) }
    }

    /// The stream a service reads now; one consumer at a time.
    var stream: AsyncStream<Element> {
        current.withLock { $0!.stream }
    }

    func yield(_ element: Element) {
        current.withLock { _ = $0!.continuation.yield(element) }
    }

    private func makeStream(generation: Int) -> Current {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: buffering)
        continuation.onTermination = { [weak self] _ in self?.renew(after: generation) }
        return Current(stream: stream, continuation: continuation, generation: generation)
    }

    /// Replaces the stream of `generation`, which ended, unless it was replaced already.
    private func renew(after generation: Int) {
        current.withLock { slot in
            guard slot?.generation == generation else { return }
            slot = makeStream(generation: generation + 1)
        }
    }
}
