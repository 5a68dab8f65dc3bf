/// Where a secret can come from, tried in order (docs/CONTRACT.md#secrets). The Secret Service
/// joins this list as a second source.
public protocol SecretSource: Sendable {
    /// For messages: "systemd credentials", "the Secret Service".
    var name: String { get }
    func lookup(account: String) -> SecretLookup
}
