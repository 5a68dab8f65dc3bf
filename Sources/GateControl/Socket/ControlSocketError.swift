import GateCore
import GateSystem

/// Why the control socket cannot be set up, as a sentence naming its path.
public struct ControlSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "cannot listen on \(path): \(reason)" }
}
