import CLibSecret
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// The MQTT password (and any other `account`) in the desktop's Secret Service,
/// through libsecret: schema `org.gate.Credentials`, attributes `service=gate`
/// and `account=<account>` (docs/CONTRACT.md#secrets). `secret-tool lookup service gate account
/// mqtt-password` finds what `store` writes; an entry made with `secret-tool store`
/// is found here when it carries the schema too (`xdg:schema org.gate.Credentials`).
///
/// Every call is synchronous and talks D-Bus: use it from a thread of your own (or
/// a command's main path), never from Swift's cooperative pool. A lookup in a
/// locked collection lets the keyring show its unlock prompt on a desktop.
///
/// Owns the libsecret schema it creates; not `Sendable`: make one where it is used.
public final class SecretServiceStore {
    public static let schemaName = "org.gate.Credentials"
    public static let service = "gate"

    private let api: SecretServiceAPI
    private let schema: Owned<OpaquePointer>

    /// Fails at once, without loading libsecret, when there is no session bus to
    /// reach a Secret Service on (the usual case for a system service or over SSH
    /// on a headless machine).
    public init(environment: [String: String] = ProcessEnvironment.current()) throws(SecretServiceFailure) {
        // Without a session bus, GLib's last resort (autolaunching a bus through X11)
        // would only fail slowly or leave a stray bus behind.
        guard SessionBus.isPresent(environment: environment) else {
            throw .unavailable(
                "there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set), so no Secret "
                    + "Service to ask; \(SessionBus.headlessAdvice)"
            )
        }
        let api = try SecretServiceLibrary.api()
        // SECRET_SCHEMA_NONE: lookups match the schema name too (the `xdg:schema`
        // attribute). With DONT_MATCH_NAME an entry made by hand with `secret-tool store
        // service gate account mqtt-password` would also match, and `store` (which
        // replaces only an entry with the same schema) would then add a second entry
        // instead of replacing it, and a lookup could keep returning the old password.
        var table = api.table
        guard let schema = gate_secret_schema_new(&table, Self.schemaName, SECRET_SCHEMA_NONE) else {
            throw .failed("libsecret could not create the schema \(Self.schemaName)")
        }
        self.api = api
        self.schema = Owned(schema) { api.secret_schema_unref($0) }
    }

    /// Stores (or replaces) the entry for `account` in the default collection.
    public func store(_ secret: Secret, account: String, label: String) throws(SecretServiceFailure) {
        let attributes = self.attributes(account)
        var error: UnsafeMutablePointer<GError>?
        // libsecret copies the password into its own non-pageable memory.
        let stored = secret.withBytes { bytes in
            WipedCString.with(bytes) { password in
                api.secret_password_storev_sync(schema.pointer, attributes.pointer, nil, label, password, nil, &error)
            }
        }
        try check(error, doing: "store the entry")
        if stored == 0 {
            throw .failed("the Secret Service did not store the entry and gave no reason")
        }
    }

    /// The entry for `account`, or nil when there is none.
    public func lookup(account: String) throws(SecretServiceFailure) -> Secret? {
        let attributes = self.attributes(account)
        var error: UnsafeMutablePointer<GError>?
        // Freeing it with `secret_password_free` wipes it first.
        let found = api.secret_password_lookupv_nonpageable_sync(schema.pointer, attributes.pointer, nil, &error)
            .map { Owned($0) { [api] in api.secret_password_free($0) } }
        try check(error, doing: "look the entry up")
        guard let found else {
            // Nothing unlocked matched. If a locked entry exists, the keyring could not be
            // unlocked (no prompt could be shown, or it was dismissed): say so, instead of
            // advising to store a password that is already there.
            try refuseIfLocked(attributes, doing: "read the entry")
            return nil
        }
        // The one copy gate keeps, as a `Secret` (wiped when it is freed).
        return withExtendedLifetime(found) {
            let count = strlen(found.pointer)
            return found.pointer.withMemoryRebound(to: UInt8.self, capacity: count) { bytes in
                Secret(bytes: UnsafeBufferPointer(start: bytes, count: count))
            }
        }
    }

    /// Deletes the entry for `account`; false when there was none.
    @discardableResult
    public func clear(account: String) throws(SecretServiceFailure) -> Bool {
        let attributes = self.attributes(account)
        var error: UnsafeMutablePointer<GError>?
        let removed = api.secret_password_clearv_sync(schema.pointer, attributes.pointer, nil, &error)
        try check(error, doing: "delete the entry")
        if removed != 0 { return true }
        try refuseIfLocked(attributes, doing: "delete the entry")
        return false
    }

    /// Throws `.locked` when a matching entry exists but is locked. Searches without
    /// unlocking (no prompt) and without loading any secret.
    private func refuseIfLocked(_ attributes: Owned<OpaquePointer>, doing action: String) throws(SecretServiceFailure) {
        var error: UnsafeMutablePointer<GError>?
        let list = api.secret_password_searchv_sync(schema.pointer, attributes.pointer, SECRET_SEARCH_ALL, nil, &error)
        let items = list.map { list in
            Owned(list) { [api] in
                var table = api.table
                gate_secret_list_free(&table, $0)
            }
        }
        try check(error, doing: action)
        if items != nil {
            throw .locked(
                "the Secret Service holds the entry but its collection is locked and was not unlocked, "
                    + "so gate cannot \(action); unlock the keyring (log in to the desktop session, or answer its "
                    + "unlock prompt) and try again"
            )
        }
    }

    /// The `GHashTable *` of attributes (`service`, `account`) of one call.
    private func attributes(_ account: String) -> Owned<OpaquePointer> {
        var table = api.table
        return Owned(gate_secret_attributes_new(&table, Self.service, account)) { [api] in api.g_hash_table_unref($0) }
    }

    /// Throws what the `GError` a call set says, if it set one, and frees it.
    private func check(_ error: UnsafeMutablePointer<GError>?, doing action: String) throws(SecretServiceFailure) {
        guard let error else { return }
        throw SecretServiceError(error, api: api).failure(doing: action)
    }
}

extension SessionBus {
    /// Where the password comes from without a desktop session.
    static let headlessAdvice =
        "on a headless machine or for the system service, provide the password as the "
        + "systemd credential `mqtt-password` instead (LoadCredentialEncrypted=mqtt-password; "
        + "gate reads $CREDENTIALS_DIRECTORY/mqtt-password)"
}

/// Owns one pointer that libsecret or GLib handed out, and frees it with `free`.
private final class Owned<Pointer> {
    let pointer: Pointer
    private let free: (Pointer) -> Void

    init(_ pointer: Pointer, free: @escaping (Pointer) -> Void) {
        self.pointer = pointer
        self.free = free
    }

    deinit { free(pointer) }
}

/// Owns a `GError *` and turns it into words for the user.
private final class SecretServiceError {
    private let pointer: UnsafeMutablePointer<GError>
    private let api: SecretServiceAPI

    init(_ pointer: UnsafeMutablePointer<GError>, api: SecretServiceAPI) {
        self.pointer = pointer
        self.api = api
    }

    deinit { api.g_error_free(pointer) }

    /// GLib's message as the tail of a sentence: a remote D-Bus error's
    /// "GDBus.Error:org.freedesktop.Secret.Error.IsLocked: " prefix removed, the
    /// first letter lowered unless it starts an acronym, no final full stop.
    var words: String {
        var text = pointer.pointee.message.map { String(cString: $0) } ?? "unknown error"
        if text.hasPrefix("GDBus.Error:"), let separator = text.firstRange(of: ": ") {
            text = String(text[separator.upperBound...])
        }
        while text.hasSuffix(".") || text.hasSuffix(" ") { text.removeLast() }
        let characters = Array(text)
        if characters.count > 1, characters[0].isUppercase, characters[1].isLowercase {
            text = characters[0].lowercased() + String(characters.dropFirst())
        }
        return text.isEmpty ? "unknown error" : text
    }

    func failure(doing action: String) -> SecretServiceFailure {
        let domain = pointer.pointee.domain
        let code = pointer.pointee.code
        let secretDomain = domain == api.secret_error_get_quark()
        let dbusDomain = domain == api.g_dbus_error_quark()
        if secretDomain && code == Int32(SECRET_ERROR_IS_LOCKED.rawValue) {
            return .locked(
                "the Secret Service's collection is locked (\(words)), so gate cannot \(action); "
                    + "unlock the keyring (log in to the desktop session, or answer its unlock prompt) and try again"
            )
        }
        if (secretDomain && code == Int32(SECRET_ERROR_NO_SUCH_OBJECT.rawValue))
            || (dbusDomain
                && (code == Int32(GATE_G_DBUS_ERROR_UNKNOWN_METHOD) || code == Int32(GATE_G_DBUS_ERROR_UNKNOWN_OBJECT)))
        {
            // What gnome-keyring answers ("Object does not exist at path …/collection/login")
            // when its default collection does not exist and could not be created,
            // typically because no prompt can be shown to ask for its password.
            return .locked(
                "the Secret Service has no usable default collection (\(words)), so gate cannot "
                    + "\(action); create or unlock the default keyring (log in to the desktop session, or answer "
                    + "its prompt) and try again"
            )
        }
        if dbusDomain
            && (code == Int32(GATE_G_DBUS_ERROR_SERVICE_UNKNOWN) || code == Int32(GATE_G_DBUS_ERROR_NAME_HAS_NO_OWNER))
        {
            return .unavailable(
                "nothing provides the Secret Service on the session bus (\(words)); start a keyring "
                    + "such as gnome-keyring, or \(SessionBus.headlessAdvice)"
            )
        }
        if domain == api.g_io_error_quark() {
            // GIO errors come from reaching the bus (socket, authentication, autolaunch).
            return .unavailable(
                "cannot reach the Secret Service on the D-Bus session bus (\(words)); "
                    + SessionBus.headlessAdvice
            )
        }
        return .failed("the Secret Service could not \(action): \(words)")
    }
}
