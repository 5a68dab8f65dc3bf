/// Why a text is not TOML (or uses TOML that gate's configuration never needs).
public struct TOMLSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based line of the offending text.
    public var line: Int
    /// The key whose value failed to parse, when the key itself was readable.
    public var key: [String]?
    /// A sentence that never quotes the value, so a secret written by mistake
    /// does not end up in a terminal or a log.
    public var message: String

    public init(line: Int, key: [String]? = nil, message: String) {
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        var text = "line \(line): "
        if let key { text += TOMLDocument.displayKey(key) + ": " }
        return text + message
    }
}
