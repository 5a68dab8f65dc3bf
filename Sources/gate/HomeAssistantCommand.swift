import ArgumentParser

struct HomeAssistantCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "homeassistant",
        abstract: "Manage the gate's Home Assistant device (MQTT discovery).",
        discussion: """
            `gate daemon` announces the device by itself when the configuration has a \
            [homeassistant] table (and [mqtt]). Removing the table and reloading the daemon \
            deletes the device; `gate homeassistant remove` deletes it from here.
            """,
        subcommands: [HomeAssistantRemoveCommand.self]
    )
}
