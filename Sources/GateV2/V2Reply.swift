import GateCore

/// A reply that passed `V2Key`'s check: genuine, and about the request asked about.
public struct V2Reply: Sendable, Equatable, CustomStringConvertible {
    public var kind: V2ReplyKind
    /// The ESP32's current epoch (for `0x9E`, the one to retry with).
    public var epoch: UInt32

    public init(kind: V2ReplyKind, epoch: UInt32) {
        self.kind = kind
        self.epoch = epoch
    }

    public var description: String { "\(kind) epoch \(String(epoch, radix: 16))" }
}
