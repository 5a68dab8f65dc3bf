/// The echoes a local opening still owes on the status topic: the `1` and `0` of its
/// cycle that it did not see while it ran, counted off as they come, for
/// `RelayObserver.echoBound` after its end (docs/CONTRACT.md#gate-daemon: echoes are
/// matched by count). The daemon's observer and the MQTT link keep one each, over the
/// same messages.
public struct EchoLedger: Sendable, Hashable {
    private var owed = RelayObserver.Echoes.none
    private var until: MonotonicInstant?

    public init() {}

    /// A local opening ended at `at` owing `echoes`; they replace any still owed.
    public mutating func expect(_ echoes: RelayObserver.Echoes, endedAt at: MonotonicInstant) {
        owed = echoes
        until = at + RelayObserver.echoBound
    }

    /// Counts `report` off as an echo if one of its kind is owed and still awaited.
    public mutating func take(_ report: RelayObserver.Report, at: MonotonicInstant) -> Bool {
        guard let until, at < until else { return false }
        switch report {
        case .activated where owed.activations > 0:
            owed.activations -= 1
            return true
        case .released where owed.releases > 0:
            owed.releases -= 1
            return true
        case .activated, .released, .invalid:
            return false
        }
    }
}
