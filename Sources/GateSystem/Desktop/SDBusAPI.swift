import CSDBus
import GateCore
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The table of sd-bus functions, every entry present (checked when loaded).
///
/// `@unchecked Sendable`: it holds only C function pointers, filled once before it
/// is shared and never changed after.
@dynamicMemberLookup
struct SDBusAPI: @unchecked Sendable {
    var table: gate_sdbus_api

    /// `api.sd_bus_call(...)` calls `sd_bus_call`. Never nil: the loader fails unless every entry was found.
    subscript<Function>(dynamicMember keyPath: KeyPath<gate_sdbus_api, Function?>) -> Function {
        table[keyPath: keyPath]!
    }
}
