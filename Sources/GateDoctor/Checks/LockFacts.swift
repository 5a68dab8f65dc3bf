/// The opening lock in the runtime folder.
public enum LockFacts: Sendable, Hashable {
    /// No lock file yet: the first opening makes it.
    case absent
    case usable(heldNow: Bool)
    /// Present but this account cannot open it for reading and writing.
    case notUsable(path: String, why: String)
}
