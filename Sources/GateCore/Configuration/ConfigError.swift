/// A configuration that cannot be used; holds every problem found, not only the first.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [ConfigProblem]
    /// What a person does about it, shown after the problems.
    public var nextStep: String

    /// The next step for problems inside a file: fix them where they are named.
    public static let fixTheFile = "Fix the file where it is named above; `gate config check` confirms it."

    public init(problems: [ConfigProblem], nextStep: String = ConfigError.fixTheFile) {
        self.problems = problems
        self.nextStep = nextStep
    }

    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
