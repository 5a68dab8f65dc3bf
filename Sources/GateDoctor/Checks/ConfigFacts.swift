import GateCore

/// Where the configuration search ended.
public enum ConfigFacts: Sendable, Equatable {
    case valid(path: String, origin: String)
    /// No file in any searched place. `suggested` is the user's own path, if there is one.
    case notFound(searched: [String], suggested: String?)
    /// A file was chosen but cannot be read, parsed or validated.
    case invalid(path: String, problems: [ConfigProblem])
}
