/// One key (or whole table) that differs between two configurations.
///
/// It holds the key's TOML name and nothing of its value: the daemon logs these
/// on every reload (docs/CONTRACT.md#logging), and a value such as a user name or a CA path has
/// no place in an audit line that anyone with journal access can read.
public struct ConfigChange: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case added, removed, changed
    }

    /// `udp.host` for a key, `mqtt` for a whole table.
    public var key: String
    public var kind: Kind

    public init(key: String, kind: Kind) {
        self.key = key
        self.kind = kind
    }

    /// `udp.host`, `mqtt (added)`, `button (removed)`
    public var description: String {
        switch kind {
        case .changed: key
        case .added: "\(key) (added)"
        case .removed: "\(key) (removed)"
        }
    }
}

extension GateConfig {
    /// Every key whose value differs from `old`, in the order of the file
    /// (docs/CONTRACT.md#configuration): tables udp, mqtt, esp32, button, runtime, and their keys as written
    /// there. A table that only one side has is a single change for the table,
    /// since listing each of its keys would tell nothing more.
    ///
    /// An optional key that appears or disappears (`mqtt.ca_file`,
    /// `mqtt.username`) is `changed`: only tables are `added` or `removed`.
    public func changes(from old: GateConfig) -> [ConfigChange] {
        Self.changes(in: "udp", old: old.udp, new: udp) { old, new in
            [
                ("host", old.host != new.host),
                ("port", old.port != new.port),
                ("timeout", old.timeout != new.timeout),
            ]
        }
            + Self.changes(in: "mqtt", old: old.mqtt, new: mqtt) { old, new in
                [
                    ("host", old.host != new.host),
                    ("port", old.port != new.port),
                    ("tls", old.tls != new.tls),
                    ("ca_file", old.caFile != new.caFile),
                    ("username", old.username != new.username),
                    ("client_id_prefix", old.clientIDPrefix != new.clientIDPrefix),
                    ("trigger_topic", old.triggerTopic != new.triggerTopic),
                    ("status_topic", old.statusTopic != new.statusTopic),
                    ("timeout", old.timeout != new.timeout),
                ]
            }
            + Self.changes(in: "esp32", old: old.esp32, new: esp32) { old, new in
                [
                    ("protocol", old.protocolVersion != new.protocolVersion),
                    ("key_id", old.keyID != new.keyID),
                ]
            }
            + Self.changes(in: "button", old: old.button, new: button) { old, new in
                [
                    ("chip", old.chip != new.chip),
                    ("line", old.line != new.line),
                    ("active_low", old.activeLow != new.activeLow),
                    ("debounce_ms", old.debounceMilliseconds != new.debounceMilliseconds),
                ]
            }
            + Self.changes(in: "runtime", old: old.runtime, new: runtime) { old, new in
                [
                    ("reset_delay", old.resetDelay != new.resetDelay),
                    ("cooldown", old.cooldown != new.cooldown),
                ]
            }
            + Self.changes(in: "homeassistant", old: old.homeAssistant, new: homeAssistant) { old, new in
                [
                    ("discovery_prefix", old.discoveryPrefix != new.discoveryPrefix),
                    ("node_id", old.nodeID != new.nodeID),
                    ("name", old.name != new.name),
                ]
            }
            + Self.changes(in: "notify", old: old.notify, new: notify) { old, new in
                [
                    ("every_opening", old.everyOpening != new.everyOpening),
                    ("timeout_ms", old.timeoutMilliseconds != new.timeoutMilliseconds),
                ]
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

    /// The changes inside one table; `differences` pairs each key of the table,
    /// in the file's order, with whether its values differ.
    private static func changes<Table>(
        in table: String,
        old: Table?,
        new: Table?,
        differences: (Table, Table) -> [(key: String, differs: Bool)]
    ) -> [ConfigChange] {
        switch (old, new) {
        case (nil, nil):
            return []
        case (nil, .some):
            return [ConfigChange(key: table, kind: .added)]
        case (.some, nil):
            return [ConfigChange(key: table, kind: .removed)]
        case let (old?, new?):
            return differences(old, new).filter(\.differs).map {
                ConfigChange(key: "\(table).\($0.key)", kind: .changed)
            }
        }
    }
}
