/// A host name that did not resolve to an address.
public struct ResolutionFailure: Error, Sendable, Hashable {
    public var message: String

    public init(message: String) {
        self.message = message
    }
}
