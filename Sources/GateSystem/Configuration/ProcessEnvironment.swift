import FoundationEssentials

/// The process environment as a dictionary: the one place `gate` reads it, so that
/// everything below takes an environment of the caller's (tests give their own).
public enum ProcessEnvironment {
    public static func current() -> [String: String] {
        ProcessInfo.processInfo.environment
    }
}
