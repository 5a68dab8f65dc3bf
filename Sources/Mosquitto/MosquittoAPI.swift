import CMosquitto

/// The table of libmosquitto functions, every entry present (checked when loaded).
///
/// `@unchecked Sendable`: it holds only C function pointers, filled once before
/// it is shared and never changed after.
@dynamicMemberLookup
struct MosquittoAPI: @unchecked Sendable {
    let table: gate_mosquitto_api

    /// `api.connect(...)` calls `mosquitto_connect`. Never nil: the loader fails
    /// unless every entry was found.
    subscript<Function>(dynamicMember keyPath: KeyPath<gate_mosquitto_api, Function?>) -> Function {
        table[keyPath: keyPath]!
    }
}
