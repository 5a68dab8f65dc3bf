import CSDBus
import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

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
