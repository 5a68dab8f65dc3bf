public struct CredentialFailure: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it, short enough for one terminal line or two.
    public var message: String
    /// Where gate looked and what each place said (`-v`, the daemon's log); empty
    /// when the message says it all.
    public var looked: String

    public init(message: String, looked: String = "") {
        self.message = message
        self.looked = looked
    }

    /// The message with where gate looked, for a log that has no `-v` to ask for it.
    public var description: String { looked.isEmpty ? message : "\(message) (looked: \(looked))" }
}
