import CGPIOD

/// The table of libgpiod functions, every entry present (checked when loaded).
///
/// `@unchecked Sendable`: it holds only C function pointers, filled once before
/// it is shared and never changed after.
@dynamicMemberLookup
struct GPIODAPI: @unchecked Sendable {
    let table: gate_gpiod_api

    init(_ table: gate_gpiod_api) {
        self.table = table
    }

    /// `api.chip_open_lookup(...)` calls `gpiod_chip_open_lookup`. Never nil: the
    /// loader fails unless every entry was found.
    subscript<Function>(dynamicMember keyPath: KeyPath<gate_gpiod_api, Function?>) -> Function {
        table[keyPath: keyPath]!
    }
}
