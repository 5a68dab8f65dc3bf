#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `pipe(2)` failed for a `WakeSignal`.
public struct WakeSignalError: Error, Sendable {
    public var code: Int32
}
