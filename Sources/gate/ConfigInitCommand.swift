import ArgumentParser
import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
#endif

struct ConfigInitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Write a commented starter configuration where gate will find it.",
        discussion: """
            Writes to the first place of the search (see `gate config --help`) that this \
            account can write: the --config path or $GATE_CONFIG when given; as root \
            /etc/gate/gate.toml (the service reads it); otherwise \
            $XDG_CONFIG_HOME/gate/gate.toml (~/.config/gate/gate.toml), making its folder \
            (else /etc/gate/gate.toml, when this account may write there). Every key is in \
            the file with its default and what it means; [mqtt] is switched on only with \
            --mqtt, [udp] unless only --mqtt is given, and without --udp, udp.host is a \
            placeholder to change. An existing file is never replaced. The file validates \
            (`gate config check`); then run `gate doctor`.

            Exit codes: 0 written (the path is printed); 64 bad command line (a host that \
            is not an IP literal or host name); 73 a file is already there, or no place \
            can be written (the path is named; nothing was written).
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Option(help: ArgumentHelp("The ESP32's address or host name ([udp] host).", valueName: "host"))
    var udp: String?

    @Option(help: ArgumentHelp("The MQTT broker's address or host name: switches [mqtt] on.", valueName: "host"))
    var mqtt: String?

    func run() throws {
        _ = globals.makeLogger()
        let text = StarterConfig.text(udpHost: udp, mqttHost: mqtt)
        try refuseInvalidHosts(text)
        let locator = ConfigLocator(explicitPath: globals.config)
        let target: ConfigLocator.Candidate
        switch StarterFile.target(locator, isRoot: geteuid() == 0) {
        case .success(let found): target = found
        case .failure(let failure): throw refusal(failure)
        }
        if case .failure(let failure) = StarterFile.write(text, to: target.path) { throw refusal(failure) }
        var lines = ["Wrote \(target.path) (\(target.origin.rawValue))."]
        for earlier in StarterFile.shadowing(target, in: locator) {
            lines.append("Note: \(earlier) comes first in the search: gate run by this account reads that file.")
        }
        lines.append(
            udp == nil && mqtt == nil
                ? "Next: set udp.host in it to the ESP32's address, then run `gate doctor`."
                : "Next: run `gate doctor` to check that the ESP32 can be reached."
        )
        Terminal.printLine(lines.joined(separator: "\n"))
    }

    /// The hosts are validated as the file will be: a file that `gate config check`
    /// refuses is never written.
    private func refuseInvalidHosts(_ text: String) throws {
        do throws(ConfigError) {
            _ = try GateConfig.parse(toml: text, file: "")
        } catch {
            let options = ["udp.host": "--udp", "mqtt.host": "--mqtt"]
            let lines = error.problems.map { problem in
                "gate: \(problem.key.flatMap { options[$0] } ?? "the starter file"): \(problem.message)"
            }
            Terminal.printError(lines.joined(separator: "\n"))
            throw ExitCode(ExitStatus.usage)
        }
    }

    private func refusal(_ failure: StarterFile.Failure) -> ExitCode {
        switch failure {
        case .exists(let path):
            Terminal.printError(
                "gate: \(path) already exists; nothing was written. Edit it (then `gate config check`), "
                    + "or move it away and run `gate config init` again."
            )
        case .cannotCreate(let path, let error):
            Terminal.printError(
                "gate: cannot write \(path): \(error); nothing was written. Choose another with --config PATH."
            )
        case .nowhere(let searched):
            Terminal.printError(
                "gate: no place of the configuration search is writable for this account "
                    + "(\(searched.joined(separator: ", "))); nothing was written. "
                    + "Run it with sudo for /etc/gate/gate.toml, or choose a file with --config PATH."
            )
        }
        return ExitCode(73)  // EX_CANTCREAT
    }
}
