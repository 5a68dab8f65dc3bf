// libFuzzer target: payloads on the status topic through the decoder and the
// daemon's relay observer (see README.md).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMQTTStatus(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    var observer = RelayObserver(releaseBudget: .seconds(5))
    var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    var following = false
    // Each message: a control byte (bit 0: a local opening owns it; bits 1-3: time
    // step; 0xff: the timer fires; 0xfe: a local opening ended, owing the echoes in the
    // length byte's bits 0 and 1), a length byte, then the payload.
    var index = 0
    while index + 1 < bytes.count {
        let control = bytes[index]
        let length = Int(bytes[index + 1])
        index += 2
        now = now + .milliseconds(Int64((control >> 1) & 0x7) * 700)
        let event: RelayObserver.Event
        if control == 0xff {
            event = .timerFired(at: now)
        } else if control == 0xfe {
            event = .localOpeningEnded(
                owed: RelayObserver.Echoes(activations: length & 1, releases: (length >> 1) & 1),
                at: now
            )
        } else {
            let payload = Array(bytes[index..<min(index + length, bytes.count)])
            index += payload.count
            guard let report = RelayObserver.report(for: MQTTStatusDecoder.event(for: payload, topic: "t")) else {
                fatalError("a payload decoded to an event that is not a report")
            }
            event = .report(report, at: now, local: control & 1 == 1)
        }
        for action in observer.handle(event) {
            switch action {
            case .began:
                if following { fatalError("began while a cycle was followed") }
                following = true
            case .released, .unanswered:
                if !following { fatalError("ended without a cycle") }
                following = false
            case .echo:
                // An echo is counted off only while no cycle is followed.
                if following { fatalError("an echo taken while a cycle was followed") }
            case .armTimer, .ignoredInvalid:
                break
            }
        }
        if following != (observer.activeSince != nil) { fatalError("observer state and actions disagree") }
    }
    return 0
}
