#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A secret handed to a C library that takes it as a C string and keeps a copy of
/// its own (libmosquitto, libsecret): the NUL-terminated copy made for the call is
/// wiped with `explicit_bzero` before it is freed, so no stray copy stays behind.
public enum WipedCString {
    /// Calls `body` with a NUL-terminated copy of `bytes`, valid only during the call.
    public static func with<R>(
        _ bytes: UnsafeBufferPointer<UInt8>,
        _ body: (UnsafePointer<CChar>) throws -> R
    ) rethrows
        -> R
    {
        let buffer = UnsafeMutableBufferPointer<CChar>.allocate(capacity: bytes.count + 1)
        defer {
            explicit_bzero(buffer.baseAddress!, buffer.count)
            buffer.deallocate()
        }
        bytes.withMemoryRebound(to: CChar.self) { _ = buffer.initialize(from: $0) }
        buffer[bytes.count] = 0
        return try body(buffer.baseAddress!)
    }
}
