import CGateProtocol

/// Reading the core's state for the simulator's log and trigger log, and the one
/// condition the `busy` fault sets up. The rules stay the core's: nothing here decides
/// what a request gets.
extension gate_device {
    func relay(_ index: Int) -> gate_device_relay { cArrayElement(index, of: relays) }

    private mutating func setRelay(_ index: Int, _ relay: gate_device_relay) {
        precondition(index >= 0 && index < Int(GATE_MAX_RELAYS))
        withUnsafeMutableBytes(of: &relays) {
            $0.storeBytes(
                of: relay,
                toByteOffset: index * MemoryLayout<gate_device_relay>.stride,
                as: gate_device_relay.self
            )
        }
    }

    /// Who holds relay `index` now: nil when it is free.
    func holder(of index: Int) -> ActivationIdentity? {
        let relay = relay(index)
        guard relay.held else { return nil }
        if relay.v1 { return .v1 }
        let key: gate_device_key = cArrayElement(Int(relay.key_index), of: keys)
        return .v2(keyID: key.key_id, counter: relay.counter)
    }

    /// The `busy` fault: relay 0 held by another opening that no one awaits and that is
    /// never due for release, so the core answers an open `0x93` by its own rule 5 (and a
    /// copy of that counter `0x93` again by rule 2). It is held as a v1 trigger holds it
    /// (no key, no counter, no peer). False, and nothing changed, when the relay is held
    /// already: then it is busy for real.
    mutating func holdRelayElsewhere() -> Bool {
        guard !relay(0).held else { return false }
        var other = gate_device_relay()
        other.held = true
        other.v1 = true
        other.release_at_ms = .max
        setRelay(0, other)
        return true
    }

    /// Ends what `holdRelayElsewhere` set up, once the request has been judged.
    mutating func endHoldElsewhere() {
        let current = relay(0)
        if current.held && current.v1 && current.release_at_ms == .max && current.peer_count == 0 {
            setRelay(0, gate_device_relay())
        }
    }
}

/// Element `index` of a C array, which Swift imports as a tuple of `Element`s.
func cArrayElement<Tuple, Element>(_ index: Int, of array: Tuple) -> Element {
    let offset = index * MemoryLayout<Element>.stride
    precondition(index >= 0 && offset + MemoryLayout<Element>.size <= MemoryLayout<Tuple>.size)
    return withUnsafeBytes(of: array) { $0.load(fromByteOffset: offset, as: Element.self) }
}

/// Who caused a relay activation, for the log and the trigger log.
enum ActivationIdentity: Sendable, Equatable, CustomStringConvertible {
    /// A v1 trigger (no key provisioned, or `--accept-v1`).
    case v1
    case v2(keyID: UInt8, counter: UInt64)

    var description: String {
        switch self {
        case .v1: "a v1 trigger"
        case .v2(let keyID, let counter): "key \(keyID) counter \(counter)"
        }
    }
}
