import ArgumentParser
import GateCore
import GateSystem

/// Output and exits shared by the commands that use the Secret Service: `gate secret …`
/// and `gate key new`.
enum SecretReport {
    /// Prints `gate <command>: <message>` on stderr and exits with `status`.
    static func fail(_ command: String, _ message: String, status: Int32) -> ExitCode {
        Terminal.printError("gate \(command): \(message)")
        return ExitCode(status)
    }

    /// The Secret Service, or exit 78 with why it cannot be reached and, when given,
    /// `advice`: what to do instead.
    static func openStore(_ command: String, advice: String? = nil) throws -> SecretServiceStore {
        do {
            return try SecretServiceStore()
        } catch {
            let why = "cannot use the Secret Service: \(error)"
            throw fail(command, advice.map { "\(why)\n\($0)" } ?? why, status: ExitStatus.configuration)
        }
    }

    /// Where `credential` lives in the Secret Service, for messages.
    static func item(_ credential: CredentialName) -> String {
        "schema \(SecretServiceStore.schemaName), service=\(SecretServiceStore.service), account=\(credential.rawValue)"
    }
}
