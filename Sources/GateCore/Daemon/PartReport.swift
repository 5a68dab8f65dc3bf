/// What the daemon says of a part that failed (docs/CONTRACT.md#gate-daemon), in its
/// systemd `STATUS=` and to `gate doctor`: failing and waiting to be started again, or
/// running again after failures. Parts that never failed have none.
public struct PartReport: Sendable, Hashable {
    /// `button`, or a service's name (`notify`, `homeassistant`…).
    public var part: String
    /// Failures in a row (`RestartBackoff.failures`).
    public var failures: Int
    /// The last failure, as a sentence.
    public var lastFailure: String
    /// How long until it is started again; nil once it runs again.
    public var restartIn: Duration?

    public init(part: String, failures: Int, lastFailure: String, restartIn: Duration?) {
        self.part = part
        self.failures = failures
        self.lastFailure = lastFailure
        self.restartIn = restartIn
    }

    /// `button failed (2 in a row): …; restarting in 2.0 s`, or `button restarted after 2
    /// failures (last: …)`. One line: `STATUS=` is one line of systemd's.
    public var sentence: String {
        let why = SafeText.escaped(lastFailure)
        let count = failures == 1 ? "1 failure" : "\(failures) failures"
        if let restartIn {
            return "\(part) failed (\(count) in a row): \(why); restarting in \(restartIn.humanReadable)"
        }
        return "\(part) restarted after \(count) (last: \(why))"
    }
}
