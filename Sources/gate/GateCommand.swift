import ArgumentParser
import GateCore

@main
struct GateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gate",
        abstract: "Open a garden gate through an ESP32 relay: UDP on the LAN first, MQTT as the fallback.",
        discussion: """
            Every opening is confirmed by the relay's complete cycle: the ESP32 reports \
            the relay on (1), then off (0). What is confirmed is the relay cycle, not the \
            gate's movement.

            Exit codes of `gate open`: 0 relay cycle confirmed, 64 bad command line, \
            69 no trigger can have reached the relay (safe to retry), 75 another opening \
            is in progress, the cooldown is running, or the relay is active, 76 the ESP32 \
            answered outside the protocol, 78 configuration missing or invalid, \
            124 a trigger was sent and the cycle was not confirmed (the relay may have \
            cycled: do not retry blindly).
            """,
        version: GateRelease.version,
        subcommands: [
            OpenCommand.self, StatusCommand.self, ConfigCommand.self, HistoryCommand.self, SecretCommand.self,
            KeyCommand.self, DaemonCommand.self, DoctorCommand.self, HomeAssistantCommand.self,
        ]
    )

    @OptionGroup var globals: GlobalOptions
}
