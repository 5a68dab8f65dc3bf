import ArgumentParser
import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
#endif

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
        version: GateVersion.current,
        subcommands: [
            OpenCommand.self, StatusCommand.self, ConfigCommand.self, HistoryCommand.self, SecretCommand.self,
            KeyCommand.self, DaemonCommand.self, DoctorCommand.self, HomeAssistantCommand.self,
        ]
    )

    @OptionGroup var globals: GlobalOptions

}

/// The entry point: `gate open` in its common forms skips ArgumentParser (see
/// `OpenRequest+FastPath`); everything else, help and errors included, goes through it.
///
/// Synchronous on purpose. An `async` main hands the main thread to `dispatch_main`,
/// which ends it with `pthread_exit`: a forced unwind that reads the unwind tables
/// (about 0.6 MB of the binary brought into memory, and 1.2 ms of every start). Here
/// the command runs as a task on the global executor (nothing in gate uses the main
/// actor) and ends the process itself; the main thread only waits.
@main
enum GateProgram {
    static func main() {
        if let request = OpenRequest(fastArguments: CommandLine.arguments.dropFirst()) {
            Task.detached {
                Glibc.exit(await request.perform())
            }
        } else {
            Task.detached {
                await GateCommand.main(nil)
                Glibc.exit(ExitStatus.success)
            }
        }
        // pause() returns after each handled signal (the daemon's SIGHUP and SIGTERM
        // handlers run on any thread that has them unblocked, this one included).
        while true {
            pause()
        }
    }
}
