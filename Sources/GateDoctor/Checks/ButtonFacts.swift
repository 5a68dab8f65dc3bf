/// Requesting the button's GPIO line (and releasing it at once).
public enum ButtonFacts: Sendable, Hashable {
    case opened
    /// Another consumer holds the line; `daemonPID` when that is a running `gate daemon`.
    case busy(daemonPID: Int32?, words: String)
    /// The chip is not there; `present` lists the chips this machine has.
    case noChip(words: String, present: [String])
    case permissionDenied(String)
    case noLine(String)
    case libraryMissing(String)
    case failed(String)
}
