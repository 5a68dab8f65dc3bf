import ArgumentParser
import GateCore
import GateSystem

struct SecretCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret",
        abstract: "Store, delete or check the MQTT password (or check the ESP32 key) in the Secret Service.",
        discussion: """
            The MQTT password never lives in the configuration. gate looks it up in this \
            order, the first found wins: the systemd credential mqtt-password \
            ($CREDENTIALS_DIRECTORY/mqtt-password, for the system service), then the Secret \
            Service of the desktop session (libsecret: gnome-keyring, KeePassXC…), under \
            the schema org.gate.Credentials with the attributes service=gate and \
            account=mqtt-password. The ESP32 key of protocol v2 (esp32-key) is found the same \
            way; `gate key new` makes it, and `status` and `delete` take it too.

            Exit codes: 0 done; 64 bad command line or unusable input; 78 nothing can be \
            stored or found (the reason and what to do are printed).
            """,
        subcommands: [SecretSetCommand.self, SecretDeleteCommand.self, SecretStatusCommand.self]
    )
}

/// The secrets gate knows (`CredentialName`): the MQTT password, and protocol v2's key
/// (made by `gate key new`, which `set` leaves to it).
enum SecretAccount: String, CaseIterable, ExpressibleByArgument {
    case mqttPassword = "mqtt-password"
    case esp32Key = "esp32-key"

    var credential: CredentialName {
        switch self {
        case .mqttPassword: .mqttPassword
        case .esp32Key: .esp32Key
        }
    }

    /// For messages: "the MQTT password".
    var title: String { credential.title }

    /// What the terminal prompt asks for.
    var prompt: String {
        switch self {
        case .mqttPassword: "MQTT password: "
        case .esp32Key: "ESP32 key: "
        }
    }

    var label: String { credential.label }
}

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
