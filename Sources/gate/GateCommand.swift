import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
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
            69 no adapter reached the ESP32, 75 another opening is in progress, \
            76 the ESP32 answered outside the protocol, 78 configuration missing or invalid, \
            124 relay activated but never released.
            """,
        version: GateVersion.current,
        subcommands: [OpenCommand.self, StatusCommand.self, ConfigCommand.self, HistoryCommand.self, SecretCommand.self, DaemonCommand.self, DoctorCommand.self]
    )

    @OptionGroup var globals: GlobalOptions

    /// `gate open` in its common forms skips ArgumentParser (see `OpenRequest+FastPath`);
    /// everything else, help and errors included, goes through it.
    static func main() async {
        if let request = OpenRequest(fastArguments: CommandLine.arguments.dropFirst()) {
            Glibc.exit(await request.perform())
        }
        await main(nil)
    }
}
