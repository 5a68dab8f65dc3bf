import ArgumentParser

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Start, validate, show or locate the configuration.",
        discussion: """
            The configuration is TOML. The first file found wins: --config, $GATE_CONFIG, \
            $XDG_CONFIG_HOME/gate/gate.toml (~/.config/gate/gate.toml), /etc/gate/gate.toml. \
            `gate config init` writes a commented starter file there. Every problem names \
            the file, the line and the key. Exit 78 when the configuration is missing or \
            does not validate.
            """,
        subcommands: [ConfigInitCommand.self, ConfigCheckCommand.self, ConfigShowCommand.self, ConfigPathCommand.self]
    )
}
