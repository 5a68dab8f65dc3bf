import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// SIGHUP for the daemon's life (`systemctl reload`): trapped once, before `READY=1`, and
/// handed to whichever run of the config-reload service reads now. swift-service-lifecycle's
/// `UnixSignalsSequence` allows one iterator per process, so a reload service started again
/// after a failure trapped on its second iteration and took the daemon with it. A SIGHUP
/// that comes while no run reads (before the first, or during a restart's backoff) is kept
/// for the next one.
final class HangupSignal: Sendable {
    /// Kept for the daemon's life: the trap ends with the source. Only `resume` and the
    /// handlers set before it touch it, from `trap`.
    private nonisolated(unsafe) let source: any DispatchSourceSignal
    private let news = Broadcast<Void>(bufferingPolicy: .bufferingNewest(1), keepingUnread: true)

    private init(source: any DispatchSourceSignal) {
        self.source = source
    }

    /// Traps SIGHUP and returns once the trap is registered, so that no SIGHUP after it is lost.
    static func trap() async -> HangupSignal {
        // SIGHUP is ignored since `Daemon.run` began (its default ends the process); the
        // source sees it all the same.
        let hangups = HangupSignal(source: DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global()))
        hangups.source.setEventHandler { [news = hangups.news] in news.yield(()) }
        await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
            hangups.source.setRegistrationHandler { registered.resume() }
            hangups.source.resume()
        }
        return hangups
    }

    /// One element per SIGHUP (several coalesce while the reader is busy) from now on, and
    /// one at once if a SIGHUP came while nobody read.
    func subscribe() -> AsyncStream<Void> {
        news.subscribe()
    }
}
