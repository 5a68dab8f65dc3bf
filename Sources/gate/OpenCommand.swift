import ArgumentParser
import GateCore

struct OpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Trigger the relay once and wait for its complete cycle.",
        discussion: """
            UDP is tried first when it is configured and the ESP32 is on a directly \
            connected network; MQTT is the fallback, used only when there is no evidence \
            that the UDP trigger reached the ESP32. The relay is never triggered twice.

            On a terminal the state is shown live on one line; otherwise one line is \
            printed per state change. With --json exactly one JSON object is printed.

            Only one opening runs at a time, whoever asks (shell, widget, daemon); for \
            runtime.cooldown seconds after a cycle a new one is refused, so that a double \
            press cannot reverse a toggle gate.

            When a daemon (gate daemon) answers on control.sock in the runtime folder, \
            the opening is handed to it and runs through its warm MQTT link; the states, \
            the output and the exit code are the same. Once the daemon has accepted the \
            opening, this command never triggers by itself: if the daemon dies mid-opening \
            it ends with 124. The daemon must run as root, as this account, or as the \
            runtime folder's owner; any other listener is ignored. --direct skips the \
            daemon.

            Exit codes: 0 relay cycle confirmed; 64 bad command line; 69 no trigger \
            can have reached the relay: none was sent, or each one sent was refused at \
            once by the network (safe to retry); 75 another opening is in progress, the \
            cooldown is running, or the relay is active (another client's cycle); 76 the \
            ESP32 answered outside the protocol; 78 configuration missing or invalid; \
            124 a trigger was sent and the complete cycle was not confirmed: no answer, \
            or the relay activated without its release (the relay may have cycled: do \
            not retry blindly).
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Option(help: ArgumentHelp("Which adapter to use: auto (UDP, then MQTT), udp or mqtt.", valueName: "adapter"))
    var via: AdapterSelection = .auto

    @Flag(help: "Print exactly one JSON object with the outcome on stdout, whatever happens.")
    var json = false

    @Option(help: ArgumentHelp("Who asked, for logs and history (letters, digits, - and _).", valueName: "name"))
    var source = "cli"

    @Flag(help: "Skip the cooldown after the last relay cycle. The lock is never skipped.")
    var force = false

    @Flag(
        help:
            "Open from this process even when a daemon answers on the control socket (control.sock in the runtime folder)."
    )
    var direct = false

    func validate() throws {
        guard OpeningSource.isValid(source) else {
            throw ValidationError("--source must be 1 to 32 letters, digits, '-' or '_'")
        }
    }

    var request: OpenRequest {
        OpenRequest(
            via: via,
            json: json,
            source: source,
            force: force,
            direct: direct,
            config: globals.config,
            logLevel: globals.effectiveLogLevel
        )
    }

    func run() async throws {
        let status = await request.perform()
        if status != ExitStatus.success {
            throw ExitCode(status)
        }
    }
}

extension AdapterSelection: ExpressibleByArgument {}
