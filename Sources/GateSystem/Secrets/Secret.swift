#if canImport(Glibc)
import Glibc
#endif

/// Secret bytes (the MQTT password) that never print.
///
/// What is wiped, exactly: the bytes live in one buffer allocated here (not a Swift
/// array, whose copy-on-write could leave the original behind while a copy is
/// zeroed), handed out only as a borrowed pointer (`withBytes`), and zeroed with
/// `explicit_bzero` before it is freed. Copies made elsewhere are not covered: the
/// `[UInt8]` given to `init` is the caller's to wipe, and libmosquitto keeps its
/// own copy of the password for reconnects and frees it without wiping (hence
/// `LimitCORE=0` in gate.service). `description` is redacted so that string
/// interpolation into a log line or an error cannot leak it.
public final class Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    // Written once in init; read only through `withBytes`; wiped and freed in deinit.
    private nonisolated(unsafe) let storage: UnsafeMutableBufferPointer<UInt8>

    public init(bytes: [UInt8]) {
        storage = .allocate(capacity: bytes.count)
        _ = storage.initialize(from: bytes)
    }

    public var isEmpty: Bool { storage.isEmpty }

    /// The bytes, borrowed for the call: do not keep them, and wipe any copy you make.
    public func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(storage))
    }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }

    deinit {
        if let base = storage.baseAddress { explicit_bzero(base, storage.count) }
        storage.deallocate()
    }
}

/// Where a secret can come from, tried in order (docs/CONTRACT.md#secrets). The Secret Service
/// joins this list as a second source.
public protocol SecretSource: Sendable {
    /// For messages: "systemd credentials", "the Secret Service".
    var name: String { get }
    func lookup(account: String) -> SecretLookup
}

public enum SecretLookup: Sendable {
    case found(Secret)
    /// This source works but holds no such secret.
    case notFound
    /// This source cannot be asked (no credentials directory, no session bus…): why.
    case unavailable(String)
    /// The source has the secret but it cannot be used (unreadable, empty): why.
    case failed(String)
}

/// The lookup chain of every credential (`CredentialName`): the first source that has it wins.
public struct CredentialLookup: Sendable {
    public var sources: [any SecretSource]

    public init(sources: [any SecretSource]) {
        self.sources = sources
    }

    /// The MQTT password, or a sentence saying what was tried and how to store one.
    public func mqttPassword() -> Result<Secret, CredentialFailure> {
        secret(.mqttPassword)
    }

    /// The secret `name`, or a sentence saying what was tried and how to provide one.
    public func secret(_ name: CredentialName) -> Result<Secret, CredentialFailure> {
        located(name).map(\.secret)
    }

    /// The secret `name` and the name of the source that had it.
    func located(_ name: CredentialName) -> Result<(secret: Secret, source: String), CredentialFailure> {
        var notes: [String] = []
        for source in sources {
            switch source.lookup(account: name.rawValue) {
            case .found(let secret):
                return .success((secret, source.name))
            case .notFound:
                notes.append("\(source.name): no entry")
            case .unavailable(let why):
                notes.append("\(source.name): \(why)")
            case .failed(let why):
                return .failure(CredentialFailure(message: "\(name.title) from \(source.name) cannot be used: \(why)"))
            }
        }
        // One short sentence with the fix; where gate looked is for -v and the logs.
        return .failure(CredentialFailure(message: name.missingAdvice, looked: notes.joined(separator: "; ")))
    }

    public static let mqttPasswordAccount = CredentialName.mqttPassword.rawValue
}

public struct CredentialFailure: Error, Sendable, CustomStringConvertible {
    /// What is wrong and how to fix it, short enough for one terminal line or two.
    public var message: String
    /// Where gate looked and what each place said (`-v`, the daemon's log); empty
    /// when the message says it all.
    public var looked: String

    public init(message: String, looked: String = "") {
        self.message = message
        self.looked = looked
    }

    /// The message with where gate looked, for a log that has no `-v` to ask for it.
    public var description: String { looked.isEmpty ? message : "\(message) (looked: \(looked))" }
}

/// systemd's `LoadCredential=`/`LoadCredentialEncrypted=`: one file per credential
/// in `$CREDENTIALS_DIRECTORY`, readable only by the service.
public struct SystemdCredentials: SecretSource {
    public let name = "systemd credentials"
    let directory: String?

    public init(environment: [String: String] = ProcessEnvironment.current()) {
        directory = environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public func lookup(account: String) -> SecretLookup {
        guard let directory else { return .unavailable("$CREDENTIALS_DIRECTORY is not set") }
        let path = directory + "/" + account
        guard access(path, F_OK) == 0 else { return .notFound }
        switch FileBytes.read(path, limit: 4096) {
        case .failure(let error):
            return .failed("cannot read \(path): \(error)")
        case .success(var bytes):
            // A credential written with `echo` ends in a newline that is not part of it.
            if bytes.last == 0x0a { bytes.removeLast() }
            if bytes.last == 0x0d { bytes.removeLast() }
            let secret = Secret(bytes: bytes)
            bytes.withUnsafeMutableBytes { buffer in
                if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
            }
            return secret.isEmpty ? .failed("\(path) is empty") : .found(secret)
        }
    }
}
