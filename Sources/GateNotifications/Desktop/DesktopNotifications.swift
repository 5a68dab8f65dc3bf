import GateCore
import GateSystem
import Plumbing
import Synchronization

/// The freedesktop notification service (`org.freedesktop.Notifications`, method
/// `Notify`) on the user's session bus, through sd-bus (CSDBus/shim.h says why
/// sd-bus). The connection is opened on the first notice and kept; one that broke
/// (the bus went away) is opened again for the next notice. A server that went away
/// only fails that notice: the next one asks again.
public final class DesktopNotifications: Sendable {
    public static let appName = "gate"
    /// How long a call may wait for the server: a server that hangs must not keep an
    /// opening's later notices waiting long (they queue behind this call).
    static let callTimeoutMicroseconds: UInt64 = 2_000_000

    private let environment: [String: String]
    private let connection = Mutex<SessionBusConnection?>(nil)

    public init(environment: [String: String] = ProcessEnvironment.current()) {
        self.environment = environment
    }

    /// Why no notification can be shown at all, before trying: no session bus.
    public var unavailability: DesktopNotificationFailure? {
        SessionBus.isPresent(environment: environment) ? nil : .noSessionBus
    }

    /// Shows `notice` (replacing `notice.replaces` when it is not 0); the server's id
    /// for it. The blocking D-Bus call runs on a thread of its own, never on Swift's
    /// cooperative pool.
    public func show(_ notice: NotificationMachine.Notice) async -> Result<UInt32, DesktopNotificationFailure> {
        await withCheckedContinuation { continuation in
            let failed = OSThread.detach { [self] in continuation.resume(returning: self.showNow(notice)) }
            guard let failed else { return }
            let why = "cannot show a desktop notification: pthread_create: \(SystemError.text(for: failed))"
            continuation.resume(returning: .failure(.failed(why)))
        }
    }

    /// On the connection kept from the last notice while it stays open, else on a new one.
    private func showNow(_ notice: NotificationMachine.Notice) -> Result<UInt32, DesktopNotificationFailure> {
        if let unavailability { return .failure(unavailability) }
        return connection.withLock { slot in
            if let open = slot, open.isOpen { return open.notify(notice) }
            switch SessionBusConnection.open() {
            case .success(let opened):
                slot = opened
                return opened.notify(notice)
            case .failure(let failure):
                slot = nil
                return .failure(failure)
            }
        }
    }

    /// Asks the session bus for the notification server (`GetServerInformation`), on
    /// a connection of its own: what `gate doctor` says about `[notify]`. Blocking,
    /// at most `callTimeoutMicroseconds`; shows nothing.
    public func serverFacts() -> NotifyFacts {
        if unavailability != nil { return .noSessionBus }
        switch SessionBusConnection.open() {
        case .success(let bus): return bus.serverFacts()
        case .failure(let failure): return .failed(why: failure.description)
        }
    }
}
