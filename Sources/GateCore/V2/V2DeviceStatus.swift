/// What a signed status reply (`0x92` or `0x94`) tells about the ESP32: its epoch, and
/// whether it still acts on v1's plain trigger (PROTOCOL-V2.md, "Status query").
public struct V2DeviceStatus: Sendable, Equatable {
    public var epoch: UInt32
    /// `0x94`: anyone on the network can still open with v1 (`gate doctor` warns).
    public var acceptsV1: Bool

    public init(epoch: UInt32, acceptsV1: Bool) {
        self.epoch = epoch
        self.acceptsV1 = acceptsV1
    }

    /// The status a reply of `kind` gives, or nil when `kind` is not an answer to a status
    /// query (an opening's replies say nothing about it).
    public init?(kind: V2ReplyKind, epoch: UInt32) {
        switch kind {
        case .status: self.init(epoch: epoch, acceptsV1: false)
        case .statusV1Accepted: self.init(epoch: epoch, acceptsV1: true)
        case .relayOn, .relayOff, .busy, .staleEpoch: return nil
        }
    }
}
