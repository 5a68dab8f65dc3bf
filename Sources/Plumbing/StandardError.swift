#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whole writes to stderr.
public enum StandardError {
    /// Writes every byte of `text`, retrying short writes and `EINTR`; gives up
    /// silently on any other error (there is nowhere left to report it).
    public static func writeAll(_ text: String) {
        _ = Descriptor.writeAll(STDERR_FILENO, Array(text.utf8))
    }
}
