import CGateProtocol

/// What the device sends, as the fault modes see it: protocol 1's reports (`on`, `off`)
/// and, under protocol 2, signed replies, v1's bytes and the plain `1`/`0` alike.
enum Report: Sendable, Equatable {
    /// The relay went on: `0x90`, v1's `0x01`, plain `1`.
    case on
    /// The relay went off: `0x91`, v1's `0x00`, plain `0`.
    case off
    /// An open's answer that moved nothing: `0x93` busy, `0x9E` stale epoch.
    case answer
    /// A status reply: `0x92`, `0x94`.
    case status
    /// The retained epoch announcement.
    case announcement

    /// What becomes of one such message under a fault.
    enum Treatment: Sendable, Equatable {
        case send(copies: Int)
        /// Sent once, made invalid: a frame whose tag fails, v1's `0x7f`, plain `x`.
        case corrupt
        case drop
    }

    init(replyType: UInt8) {
        switch UInt32(replyType) {
        case GATE_TYPE_RELAY_ON.rawValue: self = .on
        case GATE_TYPE_RELAY_OFF.rawValue: self = .off
        case GATE_TYPE_STATUS.rawValue, GATE_TYPE_STATUS_V1_ACCEPTED.rawValue: self = .status
        default: self = .answer
        }
    }

    /// The device's word on its epoch (status replies, announcements) is no report of an
    /// opening, so the faults leave it alone: a "silent" device still lets a client learn
    /// its epoch and send the open whose cycle it then does not report, as v1's silent
    /// device lets the trigger through. Only `lost-replies`, a network's fault, drops
    /// status replies too (decided where replies go out, not here).
    func treatment(under mode: FaultMode) -> Treatment {
        if self == .status || self == .announcement { return .send(copies: 1) }
        switch mode {
        case .none, .slowRelease, .udpOff, .mqttOff, .lostReplies, .busy:
            return .send(copies: 1)
        case .silent:
            return .drop
        case .noRelease:
            return self == .off ? .drop : .send(copies: 1)
        case .garbage:
            // One invalid answer in place of the whole cycle, like a device with the wrong firmware.
            return self == .off ? .drop : .corrupt
        case .duplicate:
            return .send(copies: 2)
        }
    }
}
