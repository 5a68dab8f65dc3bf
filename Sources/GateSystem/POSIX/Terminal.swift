import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Output that reaches its reader at once: a panel or a test reading a pipe must
/// not wait for a block buffer to fill (NOTES.md, "Output").
public enum Terminal {
    public static func isTerminal(_ fd: Int32) -> Bool {
        isatty(fd) == 1
    }

    public static func printLine(_ text: String) {
        write(text + "\n")
    }

    public static func printError(_ text: String) {
        write(text + "\n", to: STDERR_FILENO)
    }

    public static func write(_ text: String) {
        write(text, to: STDOUT_FILENO)
    }

    /// Writes all of `text` to `fd`, retrying short writes; gives up silently on an error
    /// (a closed terminal or pipe has nobody left to tell).
    public static func write(_ text: String, to fd: Int32) {
        _ = Descriptor.writeAll(fd, Array(text.utf8))
    }
}
