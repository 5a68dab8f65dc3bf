import Synchronization

/// A value for the first taker only: the control socket made before `READY=1` goes to the
/// control service's first run, and each later run (after a failure) makes its own.
final class HandedOnce<Value: Sendable>: Sendable {
    private let slot: Mutex<Value?>

    init(_ value: Value) {
        slot = Mutex(value)
    }

    func take() -> Value? {
        slot.withLock { $0.take() }
    }
}
