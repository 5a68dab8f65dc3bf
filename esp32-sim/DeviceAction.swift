import CGateProtocol
import Glibc
import Plumbing

/// One `gate_action` of the C core, in Swift's terms, so that carrying it out is an
/// exhaustive switch.
enum DeviceAction {
    /// Where a reply goes: back to a UDP sender, or on `<status>/v2`.
    enum Destination: CustomStringConvertible {
        case udp(SocketAddress)
        case mqtt

        var transport: Transport {
            switch self {
            case .udp: .udp
            case .mqtt: .mqtt
            }
        }

        var description: String {
            switch self {
            case .udp(let address): "udp \(address)"
            case .mqtt: "mqtt"
            }
        }
    }

    case relay(on: Bool)
    case reply(frame: [UInt8], to: Destination)
    case replyV1(byte: UInt8, to: SocketAddress)
    case announce(keyID: UInt8, frame: [UInt8])

    /// nil for a kind this port does not know, or a UDP peer whose address is neither IPv4
    /// nor IPv6 (the core only copies back what the port gave it, so neither happens).
    init?(_ action: gate_action) {
        let frame = withUnsafeBytes(of: action.frame) { Array($0) }
        switch UInt32(action.kind) {
        case GATE_ACTION_RELAY_ON.rawValue:
            self = .relay(on: true)
        case GATE_ACTION_RELAY_OFF.rawValue:
            self = .relay(on: false)
        case GATE_ACTION_REPLY.rawValue:
            if UInt32(action.peer.via) == GATE_VIA_MQTT.rawValue {
                self = .reply(frame: frame, to: .mqtt)
            } else {
                guard let address = action.peer.socketAddress else { return nil }
                self = .reply(frame: frame, to: .udp(address))
            }
        case GATE_ACTION_REPLY_V1.rawValue:
            guard let address = action.peer.socketAddress else { return nil }
            self = .replyV1(byte: frame[0], to: address)
        case GATE_ACTION_ANNOUNCE.rawValue:
            self = .announce(keyID: action.key_id, frame: frame)
        default:
            return nil
        }
    }
}

extension gate_peer {
    /// A UDP sender, its `sockaddr_in`/`sockaddr_in6` in the address bytes: the core copies
    /// and compares them, never reads them.
    init(udp address: SocketAddress) {
        self.init()
        via = UInt8(GATE_VIA_UDP.rawValue)
        let bytes = address.withSockaddr { pointer, length in
            Array(UnsafeRawBufferPointer(start: pointer, count: Int(length)))
        }
        withUnsafeMutableBytes(of: &self.address) { raw in
            raw.copyBytes(from: bytes.prefix(raw.count))
        }
    }

    var socketAddress: SocketAddress? {
        var storage = sockaddr_storage()
        withUnsafeBytes(of: address) { source in
            withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: source) }
        }
        return SocketAddress(storage: storage)
    }
}
