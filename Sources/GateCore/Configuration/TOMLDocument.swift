/// The subset of TOML that a configuration file like docs/CONTRACT.md#configuration uses: tables,
/// keys (bare, quoted, dotted) and scalar values, each with its line.
///
/// Arrays, inline tables, multi-line strings and dates are refused with a
/// syntax error rather than parsed: gate has no setting that takes them, and
/// a parser without nesting cannot recurse or hang whatever it is fed.
public struct TOMLDocument: Sendable {
    /// A `[header]` line.
    public struct Table: Sendable, Equatable {
        public var path: [String]
        public var line: Int
    }

    /// A `key = value` line, filed under the table it was written in.
    public struct Entry: Sendable, Equatable {
        /// The path of the `[header]` above the key (empty at the top).
        public var table: [String]
        /// The key as written: more than one part when dotted.
        public var key: [String]
        public var value: TOMLValue
        public var line: Int

        /// Where the value lives: `table + key`.
        public var path: [String] { table + key }
    }

    /// Deeper paths are refused: gate needs two levels, and a bound keeps the
    /// work per line linear in its length.
    public static let maximumKeyDepth = 16

    /// Table headers in file order.
    public private(set) var tables: [Table] = []
    /// Key/value lines in file order.
    public private(set) var entries: [Entry] = []

    /// What a path already names, to refuse what TOML calls redefinitions.
    private enum Definition {
        case value(line: Int)
        case header(line: Int)
        /// A super-table of a header (`a` for `[a.b]`), which `[a]` may still define.
        case implicit
        /// Created by a dotted key (`a.b = 1` creates `a`); closed to headers.
        case dotted(line: Int)
    }

    /// What each path (a table or a key) was defined as, for the redefinition rules.
    private var definitions: [[String]: Definition] = [:]
    private var currentTable: [String] = []

    public init(parsing text: String) throws(TOMLSyntaxError) {
        let bytes = Array(text.utf8)
        var start = 0
        // A byte order mark is not content; editors on some systems add one.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        var lineNumber = 1
        while start <= bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != 0x0A { end += 1 }
            let next = end + 1
            if end > start, bytes[end - 1] == 0x0D, end < bytes.count { end -= 1 }
            var scanner = TOMLLineScanner(bytes: bytes, start: start, end: end, line: lineNumber)
            let statement: TOMLLineScanner.Statement
            do throws(TOMLSyntaxError) {
                statement = try scanner.statement()
            } catch {
                // The scanner knows the key as written; the problem names it in full.
                throw TOMLSyntaxError(
                    line: error.line,
                    key: error.key.map { currentTable + $0 },
                    message: error.message
                )
            }
            switch statement {
            case .blank:
                break
            case .table(let path):
                try defineTable(path, line: lineNumber)
            case .keyValue(let key, let value):
                try defineValue(key, value: value, line: lineNumber)
            }
            start = next
            lineNumber += 1
        }
    }

    private mutating func defineTable(_ path: [String], line: Int) throws(TOMLSyntaxError) {
        // The header's own path and each above it (`a` for `[a.b]`) must not hold a value.
        for length in 1...path.count {
            let prefix = Array(path[..<length])
            if case .value(let first) = definitions[prefix] {
                throw conflict(
                    prefix,
                    line: line,
                    "already holds a value (line \(first)), so it cannot also be a table"
                )
            }
            if length < path.count, definitions[prefix] == nil { definitions[prefix] = .implicit }
        }
        switch definitions[path] {
        case .header(let first):
            throw conflict(
                path,
                line: line,
                "the table [\(Self.displayKey(path))] is defined twice (first on line \(first))"
            )
        case .dotted(let first):
            throw conflict(
                path,
                line: line,
                "the table [\(Self.displayKey(path))] was already created by a dotted key on line \(first)"
            )
        default:  // nil or .implicit: a value was refused above
            definitions[path] = .header(line: line)
        }
        tables.append(Table(path: path, line: line))
        currentTable = path
    }

    private mutating func defineValue(_ key: [String], value: TOMLValue, line: Int) throws(TOMLSyntaxError) {
        let path = currentTable + key
        guard path.count <= Self.maximumKeyDepth else {
            throw conflict(
                path,
                line: line,
                "keys nested deeper than \(Self.maximumKeyDepth) levels are not used in gate's configuration"
            )
        }
        for length in (currentTable.count + 1)..<path.count {
            let prefix = Array(path[..<length])
            switch definitions[prefix] {
            case .value(let first):
                throw conflict(
                    path,
                    line: line,
                    "\(Self.displayKey(prefix)) already holds a value (line \(first)), so it cannot also hold keys"
                )
            case .header(let first):
                throw conflict(
                    path,
                    line: line,
                    "the table [\(Self.displayKey(prefix))] has a header on line \(first); add keys to it there"
                )
            case .implicit:
                throw conflict(
                    path,
                    line: line,
                    "the table [\(Self.displayKey(prefix))] is defined by headers; add keys under one of them"
                )
            case .dotted:
                break
            case nil:
                definitions[prefix] = .dotted(line: line)
            }
        }
        switch definitions[path] {
        case .value(let first):
            throw conflict(path, line: line, "duplicate key (first on line \(first))")
        case .header(let first):
            throw conflict(path, line: line, "[\(Self.displayKey(path))] is already a table (line \(first))")
        case .implicit, .dotted:
            throw conflict(path, line: line, "\(Self.displayKey(path)) is already a table")
        case nil:
            definitions[path] = .value(line: line)
        }
        entries.append(Entry(table: currentTable, key: key, value: value, line: line))
    }

    private func conflict(_ path: [String], line: Int, _ message: String) -> TOMLSyntaxError {
        TOMLSyntaxError(line: line, key: path, message: message)
    }
}

extension TOMLDocument {
    /// `udp.port`; parts that are not bare keys are quoted, so that a key with
    /// a dot or a line break in it cannot be mistaken for another or split a message.
    public static func displayKey(_ path: [String]) -> String {
        path.map { part in
            let bare = !part.isEmpty && part.utf8.allSatisfy(TOMLLineScanner.isBareKeyByte)
            return bare ? part : quoted(part)
        }.joined(separator: ".")
    }

    /// `text` as a TOML basic string, quotes included, with what `SafeText.isUnsafe` calls
    /// unsafe escaped: a value shown by `gate config show` or in an error message cannot
    /// reorder or hide the text around it.
    public static func quoted(_ text: String) -> String {
        "\"" + SafeText.escaped(text, as: .toml) + "\""
    }
}
