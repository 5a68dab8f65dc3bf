/// The Secret Service as a source of the lookup chain (docs/CONTRACT.md#secrets), after systemd's
/// credentials.
public struct SecretServiceSource: SecretSource {
    public let name = "the Secret Service"
    let environment: [String: String]

    public init(environment: [String: String] = ProcessEnvironment.current()) {
        self.environment = environment
    }

    public func lookup(account: String) -> SecretLookup {
        do {
            let store = try SecretServiceStore(environment: environment)
            guard let secret = try store.lookup(account: account) else { return .notFound }
            let command = CredentialName(rawValue: account)?.storeCommand ?? "gate secret set \(account)"
            return secret.isEmpty
                ? .failed("the stored entry is empty; store it again with `\(command)`")
                : .found(secret)
        } catch {
            switch error {
            case .unavailable(let why): return .unavailable(why)
            case .locked(let why), .failed(let why): return .failed(why)
            }
        }
    }
}
