import CLibSecret

/// The table of libsecret and GLib functions, every entry present (checked when loaded).
///
/// `@unchecked Sendable`: it holds only C function pointers, filled once before it
/// is shared and never changed after.
@dynamicMemberLookup
struct SecretServiceAPI: @unchecked Sendable {
    var table: gate_secret_api

    /// `api.g_free(...)` calls `g_free`. Never nil: the loader fails unless every entry was found.
    subscript<Function>(dynamicMember keyPath: KeyPath<gate_secret_api, Function?>) -> Function {
        table[keyPath: keyPath]!
    }
}
