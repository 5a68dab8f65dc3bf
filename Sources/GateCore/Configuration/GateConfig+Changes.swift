extension GateConfig {
    /// Every key whose value differs from `old`, in the order of the file
    /// (docs/CONTRACT.md#configuration): its tables, and their keys as written
    /// there. A table that only one side has is a single change for the table,
    /// since listing each of its keys would tell nothing more.
    ///
    /// An optional key that appears or disappears (`mqtt.ca_file`,
    /// `mqtt.username`) is `changed`: only tables are `added` or `removed`.
    public func changes(from old: GateConfig) -> [ConfigChange] {
        zip(old.tableSettings, tableSettings).flatMap { old, new -> [ConfigChange] in
            let table = new.table.rawValue
            switch (old.settings, new.settings) {
            case (nil, nil):
                return []
            case (nil, .some):
                return [ConfigChange(key: table, kind: .added)]
            case (.some, nil):
                return [ConfigChange(key: table, kind: .removed)]
            case let (before?, after?):
                // The same keys in the same order: both come from tableSettings.
                return zip(before, after).filter { $0.value != $1.value }.map {
                    ConfigChange(key: "\(table).\($1.key)", kind: .changed)
                }
            }
        }
    }

    /// The daemon's log line for a reload:
    /// `configuration reloaded; changed: udp.host, mqtt (added)`.
    ///
    /// A reload that changed nothing is still logged, so that a SIGHUP or a
    /// touched file is visibly taken into account.
    public static func auditLine(_ changes: [ConfigChange]) -> String {
        guard !changes.isEmpty else { return "configuration reloaded; nothing changed" }
        return "configuration reloaded; changed: " + changes.map(\.description).joined(separator: ", ")
    }
}
