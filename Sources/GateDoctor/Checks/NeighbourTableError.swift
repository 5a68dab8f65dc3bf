/// Why the neighbour table could not be read (the failing call and its words).
public struct NeighbourTableError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
