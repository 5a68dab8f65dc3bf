import CGateProtocol
import Glibc
import Logging
import Plumbing
import Synchronization

/// Protocol 2's ESP32 (`--protocol 2`). The C core `gate_device`, the firmware's own,
/// makes every decision; this class does only what the firmware's port does: it feeds the
/// core each request with the time and a fresh random number, wakes it at its deadlines,
/// and carries out its actions (log lines, the trigger log, UDP datagrams, MQTT
/// publications), each through the fault of the transport it goes out on.
///
/// One lock serialises the core like the firmware's one gate task: an event's actions
/// are carried out before the next event is judged, so no `0x90` of a new cycle can
/// overtake the `0x91` of the last, and a copy of a frame racing its original on the
/// other transport is judged after it.
final class DeviceV2: Sendable {
    struct Configuration: Sendable {
        var keys: [ProvisionedKey]
        /// The firmware's migration setting: with keys, still act on v1 requests.
        var acceptsV1: Bool
        var hold: Duration
        var epochPeriodMilliseconds: UInt32
        /// Under `lost-replies`, the share of replies lost (0 < f ≤ 1).
        var lossFraction: Double
    }

    typealias SendDatagram = @Sendable (_ bytes: [UInt8], _ to: SocketAddress, _ what: String) -> Void
    typealias Publish = @Sendable (V2Publication) -> Void

    /// A request as the port received it.
    enum Request {
        case datagram([UInt8], from: SocketAddress)
        /// On `<trigger>/v2`: a frame as hex.
        case v2Message([UInt8])
        /// On the plain trigger topic: v1's trigger, any payload.
        case v1Message(String)

        var transport: Transport {
            switch self {
            case .datagram: .udp
            case .v2Message, .v1Message: .mqtt
            }
        }
    }

    private struct State {
        var core = gate_device()
        var sendDatagram: SendDatagram?
        var publish: Publish?
        var activations = 0
        var stopping = false
        /// The batch's plain `1`/`0`, published after its replies (`carryOut`).
        var plain: [String] = []
    }

    private let state: Mutex<State>
    private let configuration: Configuration
    private let faults: Faults
    private let triggerLog: TriggerLog?
    private let logger: Logger
    /// Wakes the tick thread when an event may have brought the next deadline closer.
    private let wake: WakeSignal
    private let ticker = Mutex<OSThread.Joinable?>(nil)

    /// Provisions the keys and boots (draws the first epoch). `validate()` has checked the
    /// key ids (distinct, 1…255) and their number (at most `GATE_MAX_KEYS`).
    init(
        _ configuration: Configuration,
        faults: Faults,
        triggerLog: TriggerLog?,
        logger: Logger
    ) throws(WakeSignalError) {
        var core = gate_device()
        gate_device_init(&core, 1, configuration.acceptsV1)
        core.epoch_period_ms = configuration.epochPeriodMilliseconds
        for key in configuration.keys {
            let added = key.bytes.withUnsafeBufferPointer { gate_device_add_key(&core, key.id, $0.baseAddress) }
            precondition(added, "key \(key.id) refused by the core; validate() checks ids and their number")
        }
        Self.boot(&core)
        wake = try WakeSignal()
        state = Mutex(State(core: core))
        self.configuration = configuration
        self.faults = faults
        self.triggerLog = triggerLog
        self.logger = logger
    }

    /// `1 key(s); v1 refused; epoch 0x…`, as the firmware's boot line.
    var bootLine: String {
        state.withLock { state in
            let v1 = gate_device_accepts_v1(&state.core) ? "accepted" : "refused"
            return "\(state.core.key_count) key(s); v1 \(v1); epoch \(hex32(state.core.epoch))"
        }
    }

    /// The MQTT topics the firmware subscribes to: `<trigger>/v2` once a key is provisioned,
    /// the plain trigger topic while v1 is accepted.
    var listensOnMQTT: (v1: Bool, v2: Bool) {
        state.withLock { (gate_device_accepts_v1(&$0.core), $0.core.key_count > 0) }
    }

    var isHeld: Bool { state.withLock { $0.core.relay(0).held } }

    /// Where replies go out; set before the transports start.
    func attach(sendDatagram: @escaping SendDatagram) {
        state.withLock { $0.sendDatagram = sendDatagram }
    }

    func attach(publish: @escaping Publish) {
        state.withLock { $0.publish = publish }
    }

    // MARK: - Events

    func received(_ request: Request) {
        state.withLock { state in
            let now = Self.now()
            let mode = faults[request.transport]
            state.core.hold_ms = UInt32(clamping: milliseconds(mode.hold(configured: configuration.hold)))
            var actions = gate_actions()
            var heldElsewhere = false
            if mode == .busy {
                // Up to now first, so that a cycle due for release is released, not taken
                // for the other opening.
                gate_device_tick(&state.core, now, Self.random(), &actions)
                carryOut(&actions, for: nil, in: &state)
                heldElsewhere = state.core.holdRelayElsewhere()
            }
            feed(request, now: now, into: &state.core, actions: &actions)
            if heldElsewhere { state.core.endHoldElsewhere() }
            if actions.count == 0 {
                logger.info("\(describe(request)): no answer (dropped by the protocol's rules)")
            } else {
                logger.info("\(describe(request))")
            }
            carryOut(&actions, for: request, in: &state)
        }
        wake.signal()
    }

    /// The broker accepted the connection: what the firmware does then, before it
    /// subscribes (so that the retained announcements are on the broker by the SUBACK).
    func mqttConnected() {
        state.withLock { state in
            var actions = gate_actions()
            gate_device_tick(&state.core, Self.now(), Self.random(), &actions)
            carryOut(&actions, for: nil, in: &state)
            gate_device_announce(&state.core, &actions)
            carryOut(&actions, for: nil, in: &state)
        }
    }

    /// A reboot without losing the sockets: a new epoch, every counter forgotten, the relay
    /// dropped without a report (as power leaves it), the announcements published again.
    func reboot(reason: String) {
        state.withLock { state in
            let dropped = state.core.relay(0).held ? "; the relay was held and drops, unreported" : ""
            Self.boot(&state.core)
            logger.info("rebooted (\(reason)): counters forgotten, epoch \(hex32(state.core.epoch))\(dropped)")
            var actions = gate_actions()
            gate_device_announce(&state.core, &actions)
            carryOut(&actions, for: nil, in: &state)
        }
        wake.signal()
    }

    private func feed(_ request: Request, now: UInt64, into core: inout gate_device, actions: inout gate_actions) {
        switch request {
        case .datagram(let bytes, let sender):
            var peer = gate_peer(udp: sender)
            bytes.withUnsafeBufferPointer {
                gate_device_udp(&core, now, Self.random(), &peer, $0.baseAddress, $0.count, &actions)
            }
        case .v2Message(let payload):
            payload.withUnsafeBytes {
                let text = $0.baseAddress?.assumingMemoryBound(to: CChar.self)
                gate_device_mqtt(&core, now, Self.random(), text, $0.count, &actions)
            }
        case .v1Message:
            gate_device_mqtt_v1(&core, now, Self.random(), &actions)
        }
    }

    // MARK: - Time

    /// Starts the thread that ticks the core at its deadlines (relay releases, epoch
    /// rotations). Call after the signal mask is set: the thread inherits it.
    func start() throws(SystemError) {
        let thread = try OSThread.Joinable { [self] in tickLoop() }
        ticker.withLock { $0 = thread }
    }

    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
        ticker.withLock { $0.take() }?.join()
    }

    private func tickLoop() {
        while true {
            let (deadline, stopping) = state.withLock { (gate_device_next_deadline(&$0.core), $0.stopping) }
            if stopping { return }
            let (nanoseconds, overflow) = deadline.multipliedReportingOverflow(by: 1_000_000)
            if wake.wait(until: overflow ? nil : nanoseconds) {
                wake.clear()
                continue
            }
            tick()
        }
    }

    private func tick() {
        state.withLock { state in
            let epoch = state.core.epoch
            var actions = gate_actions()
            gate_device_tick(&state.core, Self.now(), Self.random(), &actions)
            if state.core.epoch != epoch {
                logger.info("epoch \(hex32(state.core.epoch)) drawn; \(hex32(epoch)) stays valid one period")
            }
            carryOut(&actions, for: nil, in: &state)
        }
    }

    /// `gate_device_boot` refuses 0, the one value that cannot be an epoch.
    private static func boot(_ core: inout gate_device) {
        while !gate_device_boot(&core, now(), random()) {}
    }

    /// Milliseconds of CLOCK_MONOTONIC, the core's `now_ms`.
    private static func now() -> UInt64 { MonotonicNanoseconds.now() / 1_000_000 }

    private static func random() -> UInt32 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }

    // MARK: - Actions

    private func carryOut(_ actions: inout gate_actions, for request: Request?, in state: inout State) {
        let items: [gate_action] = (0..<actions.count).map { cArrayElement($0, of: actions.items) }
        actions.count = 0
        for item in items {
            guard let action = DeviceAction(item) else {
                logger.error("the protocol core gave an action this simulator cannot carry out (kind \(item.kind))")
                continue
            }
            perform(action, for: request, in: &state)
        }
        // As the firmware does (firmware/main/gate_main.c): the signed replies first, the
        // plain status after them, so that Nagle's algorithm holds the plain one, not the
        // reply a v2 client waits for.
        for text in state.plain { state.publish?(.relay(text)) }
        state.plain = []
    }

    private func perform(_ action: DeviceAction, for request: Request?, in state: inout State) {
        switch action {
        case .relay(let on):
            if on { recordActivation(for: request, in: &state) } else { logger.info("relay off") }
            let report: Report = on ? .on : .off
            faults.deliver(report, on: .mqtt, logger: logger, dropped: "\(on ? "1" : "0") not sent") { corrupt in
                state.plain.append(corrupt ? "x" : on ? "1" : "0")
            }
        case .reply(let frame, let destination):
            reply(frame, to: destination, in: state)
        case .replyV1(let byte, let address):
            let report: Report = byte == 0x01 ? .on : .off
            deliverReply(report, to: .udp(address), what: "v1 \(hex8(byte))") { corrupt in
                state.sendDatagram?([corrupt ? 0x7f : byte], address, "v1 \(hex8(corrupt ? 0x7f : byte))")
            }
        case .announce(let keyID, let frame):
            logger.info("announcing epoch \(hex32(header(of: frame).epoch)) for key \(keyID)")
            state.publish?(.announcement(keyID: keyID, hex: hexText(frame)))
        }
    }

    private func recordActivation(for request: Request?, in state: inout State) {
        state.activations += 1
        let identity = state.core.holder(of: 0) ?? .v1
        let via = request?.transport ?? .udp
        let (from, payload) = origin(of: request)
        let origin = from.map { "\(via.rawValue) from \($0)" } ?? via.rawValue
        logger.info("relay on: activation #\(state.activations) by \(identity) via \(origin)")
        // Recorded before the first report goes out, as under v1.
        if let error = triggerLog?.record(via: via, from: from, payload: payload, identity: identity) {
            logger.error("trigger log: \(error)")
        }
    }

    private func origin(of request: Request?) -> (from: String?, payload: String?) {
        switch request {
        case .datagram(_, let sender): (sender.description, nil)
        case .v2Message(let payload): (nil, String(decoding: payload, as: UTF8.self))
        case .v1Message(let payload): (nil, payload)
        case nil: (nil, nil)
        }
    }

    private func reply(_ frame: [UInt8], to destination: DeviceAction.Destination, in state: State) {
        let report = Report(replyType: frame[1])
        let what = "\(hex8(frame[1])) counter \(header(of: frame).counter)"
        deliverReply(report, to: destination, what: what) { corrupt in
            var bytes = frame
            // A tag that fails: what a device with another key, or a forger, would send.
            if corrupt { bytes[Int(GATE_FRAME_SIZE) - 1] ^= 0x01 }
            switch destination {
            case .udp(let address):
                state.sendDatagram?(bytes, address, what + (corrupt ? " (bad tag)" : ""))
            case .mqtt:
                state.publish?(.reply(hexText(bytes)))
            }
        }
    }

    /// A reply: first the network's loss (`lost-replies`), then the device's fault.
    private func deliverReply(
        _ report: Report,
        to destination: DeviceAction.Destination,
        what: String,
        send: (_ corrupt: Bool) -> Void
    ) {
        let transport = destination.transport
        if faults[transport] == .lostReplies && Double.random(in: 0..<1) < configuration.lossFraction {
            logger.info("fault \(transport.rawValue):lost-replies: \(what) to \(destination) lost")
            return
        }
        faults.deliver(report, on: transport, logger: logger, dropped: "\(what) to \(destination) not sent", send: send)
    }

    // MARK: - Log text

    private func describe(_ request: Request) -> String {
        switch request {
        case .datagram(let bytes, let sender):
            "udp from \(sender): " + describe(datagram: bytes)
        case .v2Message(let payload):
            "mqtt v2: " + describe(hex: payload)
        case .v1Message(let payload):
            "mqtt v1 trigger (payload \(jsonString(payload)))"
        }
    }

    private func describe(datagram bytes: [UInt8]) -> String {
        if bytes == [0x01] { return "v1 trigger 0x01" }
        guard bytes.count == Int(GATE_FRAME_SIZE) else { return "\(bytes.count) byte(s), not a frame" }
        return describe(frame: bytes)
    }

    private func describe(hex payload: [UInt8]) -> String {
        var frame = [UInt8](repeating: 0, count: Int(GATE_FRAME_SIZE))
        let decoded = payload.withUnsafeBytes {
            gate_frame_from_hex($0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count, &frame)
        }
        return decoded ? describe(frame: frame) : "\(payload.count) byte(s), not a frame's 64 lowercase hex digits"
    }

    private func describe(frame: [UInt8]) -> String {
        let header = header(of: frame)
        let name =
            switch UInt32(header.type) {
            case GATE_TYPE_OPEN.rawValue: "open"
            case GATE_TYPE_STATUS_QUERY.rawValue: "status query"
            default: "type \(hex8(header.type))"
            }
        return "\(name) v\(header.version) key \(header.key_id) gate \(header.gate) "
            + "epoch \(hex32(header.epoch)) counter \(header.counter)"
    }

    private func header(of frame: [UInt8]) -> gate_header {
        var header = gate_header()
        gate_frame_read(frame, &header)
        return header
    }

    /// A frame as the 64 lowercase hex digits MQTT carries.
    private func hexText(_ frame: [UInt8]) -> String {
        var hex = [CChar](repeating: 0, count: Int(GATE_FRAME_HEX_SIZE))
        gate_hex_encode(frame, frame.count, &hex)
        return String(decoding: hex.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

func hex8(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16)
    return "0x" + (digits.count == 1 ? "0" : "") + digits
}

func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}
