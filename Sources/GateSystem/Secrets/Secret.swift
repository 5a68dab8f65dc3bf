#if canImport(Glibc)
import Glibc
#endif

/// Secret bytes (the MQTT password) that never print.
///
/// What is wiped, exactly: the bytes live in one buffer allocated here (not a Swift
/// array, whose copy-on-write could leave the original behind while a copy is
/// zeroed), handed out only as a borrowed pointer (`withBytes`), and zeroed with
/// `explicit_bzero` before it is freed. Copies made elsewhere are not covered: an
/// array given to `init` is the caller's to wipe, and libmosquitto keeps its
/// own copy of the password for reconnects and frees it without wiping (hence
/// `LimitCORE=0` in gate.service). `description` is redacted so that string
/// interpolation into a log line or an error cannot leak it.
public final class Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    // Written once in init; read only through `withBytes`; wiped and freed in deinit.
    private nonisolated(unsafe) let storage: UnsafeMutableBufferPointer<UInt8>

    /// Copies `bytes` (an array the caller wipes, or a buffer borrowed for the call).
    public init(bytes: some Collection<UInt8>) {
        storage = .allocate(capacity: bytes.count)
        _ = storage.initialize(from: bytes)
    }

    public var isEmpty: Bool { storage.isEmpty }

    /// The bytes, borrowed for the call: do not keep them, and wipe any copy you make.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(storage))
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }

    deinit {
        if let base = storage.baseAddress { explicit_bzero(base, storage.count) }
        storage.deallocate()
    }
}
