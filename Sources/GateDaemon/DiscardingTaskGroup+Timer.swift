extension DiscardingTaskGroup {
    /// A service's timer, owned by its loop's group: a child that yields `input` into the
    /// loop's `continuation` after `delay`, unless the group is cancelled first (the loop
    /// ended). A loop that re-arms tells a stale timer by the instant its input carries.
    mutating func addTimer<Input: Sendable>(
        after delay: Duration,
        _ input: Input,
        into continuation: AsyncStream<Input>.Continuation
    ) {
        addTask {
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            continuation.yield(input)
        }
    }
}
