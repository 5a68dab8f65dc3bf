import CGateProtocol
import GateCore

/// The direction keys, in memory of their own that is wiped (`gate_wipe`) before it is
/// freed, and only lent out.
final class DirectionKeys: Sendable {
    // Written once in init; read only through `withKeys`; wiped and freed in deinit.
    private nonisolated(unsafe) let storage: UnsafeMutablePointer<gate_direction_keys>

    init(key: [UInt8]) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: gate_direction_keys())
        gate_direction_keys_derive(key, storage)
    }

    func withKeys<R>(_ body: (UnsafePointer<gate_direction_keys>) -> R) -> R {
        body(storage)
    }

    deinit {
        gate_wipe(storage, MemoryLayout<gate_direction_keys>.size)
        storage.deallocate()
    }
}
