#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process environment as a dictionary, without Foundation.
public enum ProcessEnvironment {
    /// Read once: `gate` never changes its own environment, and building the
    /// dictionary is a measurable part of a 10 ms opening.
    private static let snapshot: [String: String] = read()

    public static func current() -> [String: String] {
        snapshot
    }

    private static func read() -> [String: String] {
        var result: [String: String] = [:]
        var cursor = environ
        while let entry = cursor.pointee {
            let pair = String(cString: entry)
            // Split at the byte, as libc does: a search by Character cost 5,000
            // instructions a variable, and slicing by Character would take a combining
            // mark after the `=` along with it.
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
