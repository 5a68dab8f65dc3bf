import CMosquitto
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// A libmosquitto call that failed, worded as the tail of a sentence:
/// `mosquitto_connect: Connection refused`.
public struct MosquittoError: Error, Sendable, Hashable, CustomStringConvertible {
    public var call: String
    public var code: Int32
    /// The library's (or, for MOSQ_ERR_ERRNO, the system's) words for `code`.
    public var words: String

    /// Captures `errno` at once when `code` is MOSQ_ERR_ERRNO: later calls may change it.
    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
        self.words = MosquittoError.words(for: code)
    }

    /// A failure outside libmosquitto's codes (the library could not be loaded).
    public init(call: String, words: String) {
        self.call = call
        self.code = -1
        self.words = words
    }

    public var description: String { "\(call): \(words)" }

    public static func words(for code: Int32) -> String {
        if code == gate_mosq_err_errno() { return SystemError.text(for: errno) }
        guard let api = try? MosquittoLibrary.api(), let text = api.strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    /// The broker's words for a CONNACK code (5 is "not authorised").
    public static func connackWords(for code: Int32) -> String {
        guard let api = try? MosquittoLibrary.api(), let text = api.connack_string(code) else {
            return "CONNACK \(code)"
        }
        return String(cString: text)
    }
}
