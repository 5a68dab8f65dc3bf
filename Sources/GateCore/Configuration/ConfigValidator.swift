/// Walks a parsed document once, collecting problems instead of stopping at
/// the first, and builds the configuration from what is valid.
struct ConfigValidator {
    let document: TOMLDocument
    let file: String
    private(set) var problems: [ConfigProblem] = []
    /// The values of known keys, by table and key.
    private(set) var values: [ConfigTable: [String: TOMLDocument.Entry]] = [:]
    /// The line of each known table: its header, or the first key put in it.
    private(set) var tableLines: [ConfigTable: Int] = [:]

    static let passwordAdvice =
        "secrets do not live in files: store the MQTT password with `gate secret set mqtt-password`, "
        + "or give the service the systemd credential `mqtt-password` (read from $CREDENTIALS_DIRECTORY); then remove this key"

    static let esp32KeyAdvice =
        "the ESP32's key does not live in files: `gate key new` draws one and stores it as the credential "
        + "`esp32-key` (Secret Service), or give the service the systemd credential `esp32-key` "
        + "(read from $CREDENTIALS_DIRECTORY); then remove this key"

    init(document: TOMLDocument, file: String) {
        self.document = document
        self.file = file
    }

    static func problems(for error: TOMLSyntaxError, file: String) -> [ConfigProblem] {
        let key = error.key.map(TOMLDocument.displayKey)
        var problems = [ConfigProblem(file: file, line: error.line, key: key, message: error.message)]
        // A mistyped password is still a password in a file: say so too.
        if let path = error.key, path.contains(where: isPasswordLike) {
            problems.append(ConfigProblem(file: file, line: error.line, key: key, message: passwordAdvice))
        }
        return problems
    }

    /// `passwd`, or anything with `password` in it, in any case. Searched in UTF-8: a
    /// combining mark after the `d` (a quoted key may hold one) must not hide the word.
    static func isPasswordLike(_ part: String) -> Bool {
        let lowered = part.lowercased()
        return lowered == "passwd" || lowered.utf8.contains("password".utf8)
    }

    /// Problems by line (stable), problems of the whole file last.
    var sortedProblems: [ConfigProblem] {
        problems.enumerated().sorted { left, right in
            switch (left.element.line, right.element.line) {
            case let (l?, r?) where l != r: l < r
            case (_?, nil): true
            case (nil, _?): false
            default: left.offset < right.offset
            }
        }.map(\.element)
    }

    mutating func report(_ key: String?, line: Int?, _ message: String) {
        problems.append(ConfigProblem(file: file, line: line, key: key, message: message))
    }

    mutating func validate() -> GateConfig? {
        checkStructure()
        let hasTransport = tableLines[.udp] != nil || tableLines[.mqtt] != nil
        if !hasTransport {
            report(
                nil,
                line: nil,
                "the configuration needs at least one of [udp] or [mqtt]; without them gate has no way to open the gate"
            )
        }
        // Every table is checked even without a transport, so that one run lists every problem.
        let udp = udpConfig()
        let mqtt = mqttConfig()
        let button = buttonConfig()
        let runtime = runtimeConfig()
        let homeAssistant = homeAssistantConfig()
        let notify = notifyConfig()
        let esp32 = esp32Config()
        guard hasTransport else { return nil }
        if tableLines[.udp] != nil, udp == nil { return nil }
        if tableLines[.mqtt] != nil, mqtt == nil { return nil }
        if tableLines[.button] != nil, button == nil { return nil }
        if tableLines[.homeassistant] != nil, homeAssistant == nil { return nil }
        if tableLines[.notify] != nil, notify == nil { return nil }
        guard let esp32 else { return nil }
        if let mqtt, let homeAssistant { checkTopicsDisjoint(mqtt: mqtt, homeAssistant: homeAssistant) }
        return GateConfig(
            udp: udp,
            mqtt: mqtt,
            button: button,
            runtime: runtime,
            homeAssistant: homeAssistant,
            notify: notify,
            esp32: esp32
        )
    }

    /// Sorts every header and key into known or refused, and files the known ones.
    private mutating func checkStructure() {
        var refusedTables: Set<[String]> = []
        var refusedRoots: Set<String> = []
        for table in document.tables {
            if table.path.count == 1, let known = ConfigTable(rawValue: table.path[0]) {
                tableLines[known] = tableLines[known] ?? table.line
                continue
            }
            refusedTables.insert(table.path)
            if table.path.contains(where: Self.isPasswordLike) {
                report(TOMLDocument.displayKey(table.path), line: table.line, Self.passwordAdvice)
                continue
            }
            if ConfigTable(rawValue: table.path[0]) == nil { refusedRoots.insert(table.path[0]) }
            report(TOMLDocument.displayKey(table.path), line: table.line, unknownTableMessage(table.path))
        }
        for entry in document.entries {
            let path = entry.path
            if path.contains(where: Self.isPasswordLike) {
                // Said once for a `[password]` header, not again for each key under it.
                if refusedTables.contains(entry.table), entry.table.contains(where: Self.isPasswordLike) { continue }
                report(TOMLDocument.displayKey(path), line: entry.line, Self.passwordAdvice)
                continue
            }
            if refusedTables.contains(entry.table) { continue }
            guard path.count > 1 else {
                report(
                    TOMLDocument.displayKey(path),
                    line: entry.line,
                    "keys belong in a table (\(ConfigTable.list)), not at the top of the file"
                )
                continue
            }
            guard let table = ConfigTable(rawValue: path[0]) else {
                if refusedRoots.insert(path[0]).inserted {
                    report(TOMLDocument.displayKey([path[0]]), line: entry.line, unknownTableMessage([path[0]]))
                }
                continue
            }
            guard path.count == 2, table.keys.contains(path[1]) else {
                report(TOMLDocument.displayKey(path), line: entry.line, unknownKeyMessage(path, in: table))
                continue
            }
            tableLines[table] = tableLines[table] ?? entry.line
            values[table, default: [:]][path[1]] = entry
        }
    }

    private func unknownTableMessage(_ path: [String]) -> String {
        let shown = "[\(TOMLDocument.displayKey(path))]"
        if path.count > 1, ConfigTable(rawValue: path[0]) != nil {
            return "unknown table \(shown); gate's tables do not nest"
        }
        let names = ConfigTable.allCases.map(\.rawValue)
        if path.count == 1, let guess = Self.suggestion(for: path[0], among: names) {
            return "unknown table \(shown); did you mean [\(guess)]?"
        }
        return "unknown table \(shown); gate reads \(ConfigTable.list)"
    }

    private func unknownKeyMessage(_ path: [String], in table: ConfigTable) -> String {
        guard path.count == 2 else {
            return "unknown key; the keys of [\(table.rawValue)] hold plain values, not tables"
        }
        if table == .esp32, path[1] == "key" { return Self.esp32KeyAdvice }
        if let guess = Self.suggestion(for: path[1], among: table.keys) {
            return "unknown key in [\(table.rawValue)]; did you mean `\(guess)`?"
        }
        return "unknown key in [\(table.rawValue)]; it takes " + table.keys.map { "`\($0)`" }.joined(separator: ", ")
    }

    /// The closest name within edit distance 2 (case ignored), if any.
    static func suggestion(for word: String, among names: [String]) -> String? {
        let typed = Array(word.lowercased().unicodeScalars)
        var best: (name: String, distance: Int)?
        for name in names {
            let candidate = Array(name.unicodeScalars)
            // Lengths more than 2 apart cannot be within distance 2; skipping
            // them keeps a huge key from costing a huge table.
            guard abs(typed.count - candidate.count) <= 2 else { continue }
            let distance = editDistance(typed, candidate)
            if distance <= 2, distance < (best?.distance ?? .max) { best = (name, distance) }
        }
        return best?.name
    }

    /// Levenshtein distance (insertions, deletions, substitutions).
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        var previous = Array(0...b.count)
        var current = previous
        for (i, scalar) in a.enumerated() {
            current[0] = i + 1
            for j in b.indices {
                let substitution = previous[j] + (scalar == b[j] ? 0 : 1)
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
