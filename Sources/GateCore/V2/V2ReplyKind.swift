/// What a genuine protocol v2 reply says (PROTOCOL-V2.md, "The frame"): its type byte.
/// Only replies whose tag was checked (`GateV2`) ever become one of these.
public enum V2ReplyKind: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The relay went on for this counter (or, for a copy, did).
    case relayOn = 0x90
    /// The relay went off: with `relayOn`, the complete cycle.
    case relayOff = 0x91
    /// The device's status and epoch; v1 requests are refused.
    case status = 0x92
    /// The relay is held by another opening: nothing was done.
    case busy = 0x93
    /// `status`, while the device still accepts v1 requests (a migration).
    case statusV1Accepted = 0x94
    /// The request's epoch is neither the current nor the previous one: nothing was done;
    /// the reply carries the current epoch.
    case staleEpoch = 0x9E

    /// `0x92`, as in PROTOCOL-V2.md and the logs.
    public var description: String {
        let digits = String(rawValue, radix: 16, uppercase: true)
        return "0x" + digits
    }
}
