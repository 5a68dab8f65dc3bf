/// What came back outside the protocol (docs/CONTRACT.md#protocol), as the decoders found it.
public enum InvalidAnswer: Sendable, Hashable {
    case emptyDatagram
    /// A datagram byte other than `0x01`/`0x00`.
    case unexpectedByte(UInt8)
    /// A status payload other than `1`/`0`: its first bytes (trimmed) and its length.
    case unexpectedPayload([UInt8], count: Int, topic: String)
}
