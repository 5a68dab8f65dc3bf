#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An errno from a named system call, worded as the tail of a sentence:
/// `connect: Network is unreachable`.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    public var call: String
    public var code: Int32

    public init(_ call: String, code: Int32 = errno) {
        self.call = call
        self.code = code
    }

    public var description: String {
        "\(call): \(SystemError.text(for: code))"
    }

    public static func text(for code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}

extension SystemError {
    /// A failure that comes with its own words rather than an errno
    /// (`getaddrinfo`'s `gai_strerror`).
    public struct Words: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String

        public init(_ description: String) {
            self.description = description
        }
    }
}
