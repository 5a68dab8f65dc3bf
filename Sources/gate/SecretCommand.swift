import ArgumentParser
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

/// The secrets' names as the subcommands take them: `mqtt-password` or `esp32-key`.
extension CredentialName: ExpressibleByArgument {}
