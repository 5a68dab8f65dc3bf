#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process environment as a dictionary, split at the first `=` byte as libc does.
///
/// Not Foundation's `ProcessInfo.environment`: it splits by `Character`, so a value that
/// begins with a combining mark (U+0301) loses it to the `=` and the variable is not
/// found at all (GateConfigTests environmentValueBytes failed with it, 2026-11-28).
public enum ProcessEnvironment {
    /// Read once: `gate` never changes its own environment.
    private static let snapshot: [String: String] = read()

    public static func current() -> [String: String] {
        snapshot
    }

    private static func read() -> [String: String] {
        var result: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let pair = String(cString: entry)
            // Split at the byte: slicing by Character would take a combining mark after
            // the `=` along with it.
            let bytes = pair.utf8
            if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                result[String(decoding: bytes[..<equals], as: UTF8.self)] =
                    String(decoding: bytes[bytes.index(after: equals)...], as: UTF8.self)
            }
            cursor += 1
        }
        return result
    }
}
