import CSDBus
import GateCore
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why a desktop notification was not shown, worded as the tail of a sentence.
public enum DesktopNotificationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// There is no session bus to find a notification server on.
    case noSessionBus
    /// libsystemd (sd-bus) cannot be loaded.
    case unavailable(String)
    /// The bus or the notification server failed the call.
    case failed(String)

    public var description: String {
        switch self {
        case .noSessionBus:
            "there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist); "
                + "a system service has none: for notifications run `gate daemon` in the desktop session, as a systemd user service"
        case .unavailable(let why), .failed(let why):
            why
        }
    }
}

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

/// Owns one `sd_bus *` (a connection to the user's session bus). Not thread-safe, as
/// sd-bus is not: `DesktopNotifications` uses it under its lock only.
final class SessionBusConnection {
    private let bus: OpaquePointer

    init() throws(DesktopNotificationFailure) {
        var opened: OpaquePointer?
        let code = sd_bus_open_user(&opened)
        guard code >= 0, let opened else {
            throw .failed("cannot connect to the D-Bus session bus: sd_bus_open_user: \(SystemError.text(for: -code))")
        }
        self.bus = opened
    }

    deinit {
        _ = sd_bus_flush_close_unref(bus)
    }

    var isOpen: Bool { sd_bus_is_open(bus) > 0 }

    /// `Notify(s app_name, u replaces_id, s app_icon, s summary, s body, as actions,
    /// a{sv} hints, i expire_timeout) -> u id`, with the hint `urgency` (a byte).
    func notify(_ notice: NotificationMachine.Notice) -> Result<UInt32, DesktopNotificationFailure> {
        var created: OpaquePointer?
        var code = newCall("Notify", &created)
        guard code >= 0, let message = created else { return Self.failure("sd_bus_message_new_method_call", code) }
        defer { _ = sd_bus_message_unref(message) }

        func type(_ letter: Unicode.Scalar) -> CChar { CChar(bitPattern: UInt8(ascii: letter)) }
        func string(_ text: String) -> Int32 {
            text.withCString { sd_bus_message_append_basic(message, type("s"), $0) }
        }
        func basic<Value>(_ letter: Unicode.Scalar, _ value: Value) -> Int32 {
            withUnsafePointer(to: value) { sd_bus_message_append_basic(message, type(letter), $0) }
        }
        func open(_ letter: Unicode.Scalar, _ contents: String) -> Int32 {
            sd_bus_message_open_container(message, type(letter), contents)
        }
        let close = { sd_bus_message_close_container(message) }
        let steps: [() -> Int32] = [
            { string(DesktopNotifications.appName) }, { basic("u", notice.replaces) }, { string("") },
            { string(notice.summary) }, { string(notice.body) },
            { open("a", "s") }, close,
            { open("a", "{sv}") }, { open("e", "sv") }, { string("urgency") }, { open("v", "y") },
            { basic("y", notice.urgency.rawValue) }, close, close, close,
            { basic("i", notice.timeoutMilliseconds) },
        ]
        for step in steps {
            code = step()
            if code < 0 { return Self.failure("sd_bus_message_append", code) }
        }

        let reply: OpaquePointer
        switch call(message) {
        case .success(let answered): reply = answered
        case .failure(let failure):
            let advice = failure.serviceUnknown ? " (no notification server runs in this session)" : ""
            return .failure(.failed("cannot show a desktop notification: Notify: \(failure.words)\(advice)"))
        }
        defer { _ = sd_bus_message_unref(reply) }
        var id: UInt32 = 0
        code = sd_bus_message_read_basic(reply, type("u"), &id)
        guard code > 0 else { return Self.failure("sd_bus_message_read_basic", code) }
        return .success(id)
    }

    /// `GetServerInformation() -> (s name, s vendor, s version, s spec_version)`.
    func serverFacts() -> NotifyFacts {
        var created: OpaquePointer?
        let code = newCall("GetServerInformation", &created)
        guard code >= 0, let message = created else {
            return .failed(why: "sd_bus_message_new_method_call: \(SystemError.text(for: -code))")
        }
        defer { _ = sd_bus_message_unref(message) }
        let reply: OpaquePointer
        switch call(message) {
        case .success(let answered): reply = answered
        case .failure(let failure) where failure.serviceUnknown: return .noServer
        case .failure(let failure): return .failed(why: "GetServerInformation: \(failure.words)")
        }
        defer { _ = sd_bus_message_unref(reply) }
        var texts: [String] = []
        for _ in 0..<3 {
            var text: UnsafePointer<CChar>?
            let read = sd_bus_message_read_basic(reply, CChar(bitPattern: UInt8(ascii: "s")), &text)
            guard read > 0, let text else {
                return .failed(
                    why: "GetServerInformation: an answer outside the specification (sd_bus_message_read_basic: "
                        + "\(read < 0 ? SystemError.text(for: -read) : "fewer than three strings"))"
                )
            }
            texts.append(SafeText.escaped(String(cString: text)))
        }
        return .server(name: texts[0], vendor: texts[1], version: texts[2])
    }

    private func newCall(_ member: String, _ created: inout OpaquePointer?) -> Int32 {
        sd_bus_message_new_method_call(
            bus,
            &created,
            "org.freedesktop.Notifications",
            "/org/freedesktop/Notifications",
            "org.freedesktop.Notifications",
            member
        )
    }

    /// Why a method call failed: the D-Bus error's name and words, or the errno's.
    struct CallFailure: Error {
        var name: String?
        var words: String
        var serviceUnknown: Bool { name == "org.freedesktop.DBus.Error.ServiceUnknown" }
    }

    /// Sends `message` and waits for the reply (which the caller unrefs).
    private func call(_ message: OpaquePointer) -> Result<OpaquePointer, CallFailure> {
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let code = sd_bus_call(bus, message, DesktopNotifications.callTimeoutMicroseconds, &error, &reply)
        guard code >= 0, let reply else {
            if let reply { _ = sd_bus_message_unref(reply) }
            let name = error.name.map { String(cString: $0) }
            let words = error.message.map { String(cString: $0) }
            let detail = [name, words].compactMap { $0 }.joined(separator: ": ")
            return .failure(CallFailure(name: name, words: detail.isEmpty ? SystemError.text(for: -code) : detail))
        }
        return .success(reply)
    }

    private static func failure(_ call: String, _ code: Int32) -> Result<UInt32, DesktopNotificationFailure> {
        .failure(.failed("cannot show a desktop notification: \(call): \(SystemError.text(for: -code))"))
    }
}
