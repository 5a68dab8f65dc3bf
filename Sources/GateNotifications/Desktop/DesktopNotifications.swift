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
            let failed = OSThread.detach { [self] in
                continuation.resume(returning: self.showNow(notice))
            }
            if let failed {
                continuation.resume(
                    returning: .failure(
                        .failed(
                            "cannot show a desktop notification: pthread_create: \(SystemError.text(for: failed))"
                        )
                    )
                )
            }
        }
    }

    private func showNow(_ notice: NotificationMachine.Notice) -> Result<UInt32, DesktopNotificationFailure> {
        if let unavailability { return .failure(unavailability) }
        return connection.withLock { slot -> Result<UInt32, DesktopNotificationFailure> in
            if let open = slot, !open.isOpen { slot = nil }
            let bus: SessionBusConnection
            if let open = slot {
                bus = open
            } else {
                do throws(DesktopNotificationFailure) {
                    bus = try SessionBusConnection()
                } catch {
                    return .failure(error)
                }
                slot = bus
            }
            let result = bus.notify(notice)
            if case .failure = result, !bus.isOpen { slot = nil }
            return result
        }
    }
}

extension DesktopNotifications {
    /// Asks the session bus for the notification server (`GetServerInformation`), on
    /// a connection of its own: what `gate doctor` says about `[notify]`. Blocking,
    /// at most `callTimeoutMicroseconds`; shows nothing.
    public func serverFacts() -> NotifyFacts {
        if unavailability != nil { return .noSessionBus }
        let bus: SessionBusConnection
        do throws(DesktopNotificationFailure) {
            bus = try SessionBusConnection()
        } catch {
            return .failed(why: error.description)
        }
        return bus.serverFacts()
    }
}
