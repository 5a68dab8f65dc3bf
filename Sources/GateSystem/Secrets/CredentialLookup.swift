/// The lookup chain of every credential (`CredentialName`): the first source that has it wins.
public struct CredentialLookup: Sendable {
    public var sources: [any SecretSource]

    public init(sources: [any SecretSource]) {
        self.sources = sources
    }

    /// The MQTT password, or a sentence saying what was tried and how to store one.
    public func mqttPassword() -> Result<Secret, CredentialFailure> {
        secret(.mqttPassword)
    }

    /// The secret `name`, or a sentence saying what was tried and how to provide one.
    public func secret(_ name: CredentialName) -> Result<Secret, CredentialFailure> {
        located(name).map(\.secret)
    }

    /// The secret `name` and the name of the source that had it.
    func located(_ name: CredentialName) -> Result<(secret: Secret, source: String), CredentialFailure> {
        var notes: [String] = []
        for source in sources {
            switch source.lookup(account: name.rawValue) {
            case .found(let secret):
                return .success((secret, source.name))
            case .notFound:
                notes.append("\(source.name): no entry")
            case .unavailable(let why):
                notes.append("\(source.name): \(why)")
            case .failed(let why):
                return .failure(CredentialFailure(message: "\(name.title) from \(source.name) cannot be used: \(why)"))
            }
        }
        // One short sentence with the fix; where gate looked is for -v and the logs.
        return .failure(CredentialFailure(message: name.missingAdvice, looked: notes.joined(separator: "; ")))
    }

    public static let mqttPasswordAccount = CredentialName.mqttPassword.rawValue
}
