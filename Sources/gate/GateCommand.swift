import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import GateCore
import GateSystem

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

}

/// The entry point: `gate open` in its common forms skips ArgumentParser (see
/// `OpenRequest+FastPath`); everything else, help and errors included, goes through it.
///
/// Synchronous on purpose. An `async` main hands the main thread to `dispatch_main`,
/// which ends it with `pthread_exit`: a forced unwind that reads the unwind tables
/// (about 0.6 MB of the binary brought into memory, and 1.2 ms of every start, before
/// the first line of the command runs). Here the main thread runs the synchronous
/// start of an opening (configuration, lock, status), then only waits; the rest runs
/// as a task on the global executor (nothing in gate uses the main actor) and ends the
/// process itself.
@main
enum GateProgram {
    static func main() {
        // First of all, so that loading MQTT's library overlaps everything after it
        // (EarlyMQTTExchange): a guess from the raw arguments, which `start` corrects
        // once they are parsed (an unused exchange sends nothing).
        let early = commandLineNamesMQTT() ? EarlyMQTTExchange.begin() : nil
        if let request = OpenRequest(fastArguments: CommandLine.arguments.dropFirst()) {
            switch request.start(early: early) {
            case .finished(let status):
                Glibc.exit(status)
            case .ready(let opening):
                Task.detached {
                    Glibc.exit(await request.finish(opening))
                }
            }
        } else {
            early?.abandon()
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

    /// `gate … open … mqtt …` or `--via=mqtt`: read from the C strings, before any
    /// Swift string is built (parsing `CommandLine.arguments` costs a quarter of a
    /// millisecond on a first run).
    static func commandLineNamesMQTT() -> Bool {
        var open = false
        var mqtt = false
        for index in stride(from: 1, to: Int(CommandLine.argc), by: 1) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            if strcmp(argument, "open") == 0 { open = true }
            if strcmp(argument, "mqtt") == 0 || strcmp(argument, "--via=mqtt") == 0 { mqtt = true }
        }
        return open && mqtt
    }
}
