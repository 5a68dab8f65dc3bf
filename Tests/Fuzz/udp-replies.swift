// libFuzzer target: UDP replies from the ESP32 through the decoder into the opening
// machine, UDP first with MQTT planned as the fallback (see README.md).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUDPReplies(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    var machine = OpeningMachine(
        plan: [.init(kind: .udp, budget: .seconds(2)), .init(kind: .mqtt, budget: .seconds(5))],
        resetDelay: .seconds(3)
    )
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    var started: [AdapterKind] = []
    var finished = 0
    var udpEvidence = false
    func apply(_ actions: [OpeningMachine.Action]) {
        for action in actions {
            switch action {
            case .startAdapter(let kind, _):
                if kind == .mqtt && udpEvidence {
                    fatalError("MQTT started after evidence that the UDP trigger reached the ESP32")
                }
                if started.contains(kind) { fatalError("\(kind) started twice") }
                started.append(kind)
            case .finished:
                finished += 1
            case .stopAdapter, .stateChanged:
                break
            }
        }
    }
    apply(machine.handle(.start(at: now)))
    apply(machine.handle(.adapter(.udp, .sent, at: now)))
    // Each datagram: a length byte, then that many bytes; a length of 0xff stands for
    // the budget running out, 0xfe for an immediate network refusal, 0xfd and 0xfc for
    // a `1` and a `0` seen on the status topic (the daemon's link: evidence too).
    var index = 0
    var current: AdapterKind = .udp
    while index < bytes.count, finished == 0 {
        let length = Int(bytes[index])
        index += 1
        now = now + .milliseconds(Int64(length % 7))
        var events: [AdapterEvent]
        if length == 0xfd || length == 0xfc {
            let report: RelayObserver.Report = length == 0xfd ? .activated : .released
            if current == .udp, report == .activated { udpEvidence = true }
            apply(machine.handle(.observed(report, at: now)))
            if current == .udp, started.last == .mqtt, finished == 0 {
                current = .mqtt
                apply(machine.handle(.adapter(.mqtt, .sent, at: now)))
            }
            continue
        } else if length == 0xff {
            events = [.deadlineReached]
        } else if length == 0xfe {
            events = [.unreachable("refused")]
        } else {
            let datagram = bytes[index..<min(index + length, bytes.count)]
            index += datagram.count
            events =
                current == .udp
                ? UDPReplyDecoder.events(for: datagram) : [MQTTStatusDecoder.event(for: Array(datagram), topic: "t")]
        }
        for event in events where finished == 0 {
            if current == .udp {
                switch event {
                case .relay, .invalid, .signed: udpEvidence = true
                case .sent, .unreachable, .lost, .misconfigured, .withheld, .deadlineReached: break
                }
            }
            apply(machine.handle(.adapter(current, event, at: now)))
            if current == .udp, started.last == .mqtt, finished == 0 {
                current = .mqtt
                apply(machine.handle(.adapter(.mqtt, .sent, at: now)))
            }
        }
    }
    if finished > 1 { fatalError("finished \(finished) times") }
    return 0
}
