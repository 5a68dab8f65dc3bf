/// Why the link could not connect, for the log.
struct LinkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
