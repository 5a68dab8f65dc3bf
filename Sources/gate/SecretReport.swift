import ArgumentParser
import GateCore
import GateSystem

/// Output and exits shared by the `secret` subcommands.
enum SecretReport {
    /// Prints `gate secret <command>: <message>` on stderr and exits with `status`.
    static func fail(_ command: String, _ message: String, status: Int32) -> ExitCode {
        Terminal.printError("gate secret \(command): \(message)")
        return ExitCode(status)
    }

    /// The Secret Service, or exit 78 with why it cannot be reached and what to do.
    static func openStore(_ command: String) throws -> SecretServiceStore {
        do {
            return try SecretServiceStore()
        } catch {
            throw fail(command, "cannot use the Secret Service: \(error)", status: ExitStatus.configuration)
        }
    }
}
