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
        writeAll(STDERR_FILENO, text + "\n")
    }

    public static func write(_ text: String) {
        writeAll(STDOUT_FILENO, text)
    }

    /// Writes all of `text` to `fd`, retrying short writes; gives up silently on an error
    /// (a closed terminal or pipe has nobody left to tell).
    public static func write(_ text: String, to fd: Int32) {
        writeAll(fd, text)
    }

    private static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

public enum FileStatus {
    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }
}
