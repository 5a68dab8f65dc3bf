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
