#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whole reads and writes on a descriptor.
public enum Descriptor {
    /// Writes every byte, retrying short writes and `EINTR`; the first other failure
    /// is returned with its errno (`write: Broken pipe`).
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> SystemError? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                retryingOnInterrupt { write(fd, raw.baseAddress! + offset, raw.count - offset) }
            }
            guard written >= 0 else { return SystemError("write") }
            offset += written
        }
        return nil
    }
}
