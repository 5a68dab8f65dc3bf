import CSDBus
import GateCore
import GateSystem
import Plumbing

/// Owns one `sd_bus *` (a connection to the user's session bus). Not thread-safe, as
/// sd-bus is not: `DesktopNotifications` uses it under its lock only.
final class SessionBusConnection {
    private let bus: OpaquePointer

    private init(_ bus: OpaquePointer) {
        self.bus = bus
    }

    static func open() -> Result<SessionBusConnection, DesktopNotificationFailure> {
        var opened: OpaquePointer?
        let code = sd_bus_open_user(&opened)
        guard code >= 0, let opened else {
            return .failure(
                .failed("cannot connect to the D-Bus session bus: sd_bus_open_user: \(SystemError.text(for: -code))")
            )
        }
        return .success(SessionBusConnection(opened))
    }

    deinit {
        _ = sd_bus_flush_close_unref(bus)
    }

    var isOpen: Bool { sd_bus_is_open(bus) > 0 }

    /// `Notify(s app_name, u replaces_id, s app_icon, s summary, s body, as actions,
    /// a{sv} hints, i expire_timeout) -> u id`, with the hint `urgency` (a byte).
    func notify(_ notice: NotificationMachine.Notice) -> Result<UInt32, DesktopNotificationFailure> {
        let reply: OpaquePointer
        switch call("Notify", arguments: { Self.append(notice, to: $0) }) {
        case .success(let answered): reply = answered
        case .failure(let failure):
            let advice = failure.serviceUnknown ? " (no notification server runs in this session)" : ""
            return .failure(.failed("cannot show a desktop notification: \(failure.words)\(advice)"))
        }
        defer { _ = sd_bus_message_unref(reply) }
        var id: UInt32 = 0
        let code = sd_bus_message_read_basic(reply, Self.type("u"), &id)
        guard code > 0 else {
            return .failure(
                .failed(
                    "cannot show a desktop notification: sd_bus_message_read_basic: \(SystemError.text(for: -code))"
                )
            )
        }
        return .success(id)
    }

    /// Appends `Notify`'s arguments; the first negative errno, or 0.
    private static func append(_ notice: NotificationMachine.Notice, to message: OpaquePointer) -> Int32 {
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
            let code = step()
            if code < 0 { return code }
        }
        return 0
    }

    /// `GetServerInformation() -> (s name, s vendor, s version, s spec_version)`.
    func serverFacts() -> NotifyFacts {
        let reply: OpaquePointer
        switch call("GetServerInformation") {
        case .success(let answered): reply = answered
        case .failure(let failure) where failure.serviceUnknown: return .noServer
        case .failure(let failure): return .failed(why: failure.words)
        }
        defer { _ = sd_bus_message_unref(reply) }
        var texts: [String] = []
        for _ in 0..<3 {
            var text: UnsafePointer<CChar>?
            let read = sd_bus_message_read_basic(reply, Self.type("s"), &text)
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

    /// Why a method call failed, worded with the step that failed: the D-Bus error's
    /// name and words, or the errno's.
    struct CallFailure: Error {
        var name: String?
        var words: String
        var serviceUnknown: Bool { name == "org.freedesktop.DBus.Error.ServiceUnknown" }
    }

    /// Calls `member` of the notification server with what `arguments` appends (a
    /// negative errno stops it) and waits for the reply, which the caller unrefs.
    private func call(
        _ member: String,
        arguments: (OpaquePointer) -> Int32 = { _ in 0 }
    ) -> Result<OpaquePointer, CallFailure> {
        var created: OpaquePointer?
        let code = sd_bus_message_new_method_call(
            bus,
            &created,
            "org.freedesktop.Notifications",
            "/org/freedesktop/Notifications",
            "org.freedesktop.Notifications",
            member
        )
        guard code >= 0, let message = created else {
            return .failure(CallFailure(words: "sd_bus_message_new_method_call: \(SystemError.text(for: -code))"))
        }
        defer { _ = sd_bus_message_unref(message) }
        let appended = arguments(message)
        guard appended >= 0 else {
            return .failure(CallFailure(words: "sd_bus_message_append: \(SystemError.text(for: -appended))"))
        }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let sent = sd_bus_call(bus, message, DesktopNotifications.callTimeoutMicroseconds, &error, &reply)
        guard sent >= 0, let reply else {
            if let reply { _ = sd_bus_message_unref(reply) }
            let name = error.name.map { String(cString: $0) }
            let words = [name, error.message.map { String(cString: $0) }].compactMap { $0 }.joined(separator: ": ")
            return .failure(
                CallFailure(name: name, words: "\(member): " + (words.isEmpty ? SystemError.text(for: -sent) : words))
            )
        }
        return .success(reply)
    }

    private static func type(_ letter: Unicode.Scalar) -> CChar { CChar(bitPattern: UInt8(ascii: letter)) }
}
