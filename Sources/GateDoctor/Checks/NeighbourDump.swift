import GateCore

/// The netlink exchange that reads the kernel's neighbour table (`RTM_GETNEIGH` with
/// `NLM_F_DUMP`, rtnetlink(7)): the request's bytes, and the reading of the replies.
/// Netlink uses the host's byte order.
public enum NeighbourDump {
    /// What one buffer of replies held.
    public struct Batch: Sendable, Hashable {
        public var entries: [NeighbourEntry] = []
        /// `NLMSG_DONE` came: the dump is complete.
        public var done = false
        /// `NLMSG_ERROR` with this errno.
        public var error: Int32?
    }

    static let headerSize = 16
    static let neighbourMessageSize = 12
    static let messageError: UInt16 = 2
    static let messageDone: UInt16 = 3
    static let newNeighbour: UInt16 = 28
    static let getNeighbour: UInt16 = 30
    static let flagRequest: UInt16 = 0x1
    static let flagDump: UInt16 = 0x300
    static let attributeDestination: UInt16 = 1
    static let attributeLinkAddress: UInt16 = 2

    /// The dump request for one address family (`AF_INET` 2, `AF_INET6` 10).
    public static func request(family: UInt8, sequence: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        append(UInt32(headerSize + neighbourMessageSize), to: &bytes)
        append(getNeighbour, to: &bytes)
        append(flagRequest | flagDump, to: &bytes)
        append(sequence, to: &bytes)
        append(UInt32(0), to: &bytes)
        bytes += [family] + [UInt8](repeating: 0, count: neighbourMessageSize - 1)
        return bytes
    }

    /// Reads the netlink messages in `bytes` (one `recv`); a truncated message ends the reading.
    public static func read(_ bytes: [UInt8]) -> Batch {
        var batch = Batch()
        var offset = 0
        while offset + headerSize <= bytes.count {
            let length = Int(load(UInt32.self, bytes, offset))
            let type = load(UInt16.self, bytes, offset + 4)
            guard length >= headerSize, offset + length <= bytes.count else { break }
            let body = Array(bytes[(offset + headerSize)..<(offset + length)])
            switch type {
            case messageDone:
                batch.done = true
            case messageError:
                // An nlmsgerr: the negative errno, 0 for an acknowledgement.
                if body.count >= 4 {
                    let code = Int32(bitPattern: load(UInt32.self, body, 0))
                    if code != 0 { batch.error = -code }
                }
            case newNeighbour:
                if let entry = entry(body) { batch.entries.append(entry) }
            default:
                break
            }
            offset += aligned(length)
        }
        return batch
    }

    /// One `ndmsg` and its attributes; nil without a destination address.
    static func entry(_ body: [UInt8]) -> NeighbourEntry? {
        guard body.count >= neighbourMessageSize else { return nil }
        let interfaceIndex = Int32(bitPattern: load(UInt32.self, body, 4))
        let state = NeighbourEntry.State(rawValue: load(UInt16.self, body, 8))
        var destination: IPAddress?
        var linkAddress: [UInt8]?
        var offset = neighbourMessageSize
        while offset + 4 <= body.count {
            let length = Int(load(UInt16.self, body, offset))
            let type = load(UInt16.self, body, offset + 2) & 0x3FFF
            guard length >= 4, offset + length <= body.count else { break }
            let value = Array(body[(offset + 4)..<(offset + length)])
            if type == attributeDestination { destination = IPAddress(bytes: value) }
            if type == attributeLinkAddress { linkAddress = value }
            offset += aligned(length)
        }
        guard let destination else { return nil }
        return NeighbourEntry(
            address: destination,
            interfaceIndex: interfaceIndex,
            state: state,
            linkAddress: linkAddress
        )
    }

    static func aligned(_ length: Int) -> Int { (length + 3) & ~3 }

    static func load<T: FixedWidthInteger>(_ type: T.Type, _ bytes: [UInt8], _ offset: Int) -> T {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
    }

    static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes += $0 }
    }
}
