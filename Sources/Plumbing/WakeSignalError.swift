/// `pipe(2)` failed for a `WakeSignal`.
public struct WakeSignalError: Error, Sendable {
    public var code: Int32
}
