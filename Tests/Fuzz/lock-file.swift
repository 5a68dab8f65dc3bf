// libFuzzer target: a `lock` file as a member of group gate could write it, through
// the lock record, the refusal message and the cooldown (see README.md).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLockFile(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    // What OpeningLock reads: the first 1024 bytes.
    let bytes = Array(UnsafeBufferPointer(start: data, count: min(count, 1024)))
    guard let record = LockRecord(json: bytes) else { return 0 }
    if let source = record.source, !SafeText.isLabel(source) {
        fatalError("a hostile source was kept: \(source.debugDescription)")
    }
    if let since = record.since, !WallTime.isValid(since) {
        fatalError("an invalid since was kept: \(since.debugDescription)")
    }
    if let pid = record.pid, pid <= 0 { fatalError("a pid of \(pid) was kept") }
    // The refusal message goes to a terminal: nothing in it may drive one.
    let message = record.holderDescription
    if message.unicodeScalars.contains(where: SafeText.isUnsafe) {
        fatalError("unsafe text in \(message.debugDescription)")
    }
    guard let again = LockRecord(json: Array(record.json.serialized().utf8)),
        again == record
    else {
        fatalError("a lock record changed on a round trip: \(record)")
    }
    // Any instant, any cooldown: a verdict, never a trap.
    let start = record.cooldownStart.map(MonotonicInstant.init(nanoseconds:))
    for now in [0, 1, 2_000_000_000, UInt64(Int64.max), UInt64.max] {
        for cooldown in [Duration.zero, .seconds(2), .seconds(Int64.max)] {
            if case .wait(let left) = Cooldown.check(
                lastEnd: start,
                now: MonotonicInstant(nanoseconds: now),
                cooldown: cooldown
            ),
                left <= .zero || left > cooldown
            {
                fatalError("a wait of \(left) for a cooldown of \(cooldown)")
            }
        }
    }
    return 0
}
