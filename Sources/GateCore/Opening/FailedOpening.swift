/// How a failed opening ends, under protocol v1 and v2 alike: the state it shows until
/// `resetAt` (`timeout` when a trigger may have cycled the relay, `error` otherwise) and
/// its result.
struct FailedOpening {
    let resetAt: MonotonicInstant
    let shown: GateState
    let result: OpeningResult

    init(
        error: GateKeeperError,
        adapter: AdapterKind?,
        startedAt: MonotonicInstant,
        now: MonotonicInstant,
        resetDelay: Duration,
        attempts: [AttemptRecord]
    ) {
        resetAt = now + resetDelay
        shown = error == .operationTimeout ? .timeout : .error
        result = OpeningResult(
            error: error,
            adapter: adapter,
            duration: now.duration(since: startedAt),
            attempts: attempts
        )
    }
}
