/// Turns datagrams from the ESP32 into protocol events (docs/CONTRACT.md#protocol-over-udp).
///
/// Bytes are read in order, whether `0x01 0x00` arrive as one datagram or two.
/// Everything is reported, including bytes after a release: it is the state
/// machine that knows they come after the decision and ignores them.
public enum UDPReplyDecoder {
    public static func events(for datagram: some Collection<UInt8>) -> [AdapterEvent] {
        if datagram.isEmpty {
            return [.invalid(.emptyDatagram)]
        }
        var events: [AdapterEvent] = []
        events.reserveCapacity(datagram.count)
        for byte in datagram {
            switch byte {
            case 0x01: events.append(.relay(.activated))
            case 0x00: events.append(.relay(.released))
            default:
                // Past the first unknown byte the rest cannot be trusted either.
                events.append(.invalid(.unexpectedByte(byte)))
                return events
            }
        }
        return events
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xf)])
    }
}
