/// One level change of the button line, as the kernel stamped it.
public struct Edge: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case rising
        case falling
    }

    public var kind: Kind
    /// The kernel's timestamp in nanoseconds (CLOCK_MONOTONIC on kernels since 5.7).
    public var timestampNs: UInt64

    public init(_ kind: Kind, at timestampNs: UInt64) {
        self.kind = kind
        self.timestampNs = timestampNs
    }
}
