public struct RuntimePathError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// The shared runtime folder, when it exists but this account cannot use it.
    public var unusableShared: String?
    public var description: String { message }

    public init(message: String, unusableShared: String? = nil) {
        self.message = message
        self.unusableShared = unusableShared
    }
}
