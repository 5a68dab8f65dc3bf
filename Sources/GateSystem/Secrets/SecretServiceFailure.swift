/// Why the Secret Service could not do what was asked, as the tail of a sentence
/// that ends with what to do about it. Never holds a password.
public enum SecretServiceFailure: Error, Sendable, CustomStringConvertible {
    /// It cannot be asked at all: no session bus, nothing provides the Secret
    /// Service, libsecret is not installed.
    case unavailable(String)
    /// The collection that holds (or is to hold) the entry is locked and was not unlocked.
    case locked(String)
    /// The service answered with an error.
    case failed(String)

    public var description: String {
        switch self {
        case .unavailable(let why), .locked(let why), .failed(let why): why
        }
    }
}
