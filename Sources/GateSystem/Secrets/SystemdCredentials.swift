#if canImport(Glibc)
import Glibc
#endif

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
