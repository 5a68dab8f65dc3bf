import ArgumentParser

struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Make the key of protocol v2 ([esp32] protocol = 2).",
        discussion: """
            Under protocol v2 every opening is signed with a key that the ESP32's firmware \
            holds too. gate looks it up like the MQTT password, never in the configuration: \
            the systemd credential esp32-key ($CREDENTIALS_DIRECTORY/esp32-key, for the \
            system service), then the Secret Service (schema org.gate.Credentials, \
            service=gate, account=esp32-key).
            """,
        subcommands: [KeyNewCommand.self]
    )
}
