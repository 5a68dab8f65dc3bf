/// One thing wrong with a configuration file: where, which key, and what.
///
/// Rendered as `file:line: key: message`, the way compilers report errors, so
/// that editors can jump to it.
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    /// The file the problem is in (as given to the parser); empty when there is no
    /// file to name (none was found).
    public var file: String
    /// 1-based line, when the problem is tied to one.
    public var line: Int?
    /// The dotted key (`udp.port`), or the table (`mqtt`), or `nil` for a
    /// problem of the whole file (no `[udp]` nor `[mqtt]`).
    public var key: String?
    public var message: String

    public init(file: String, line: Int? = nil, key: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        var text = ""
        if !file.isEmpty {
            text = file
            if let line { text += ":\(line)" }
            text += ": "
        }
        if let key { text += "\(key): " }
        return text + message
    }
}
