import ArgumentParser
import GateSystem

struct ConfigShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print the effective configuration, defaults included, as TOML.",
        discussion: "Secrets never appear: the MQTT password is not stored in the configuration at all."
    )

    @OptionGroup var globals: GlobalOptions

    func run() throws {
        let (config, candidate) = try ConfigLoading.load(globals)
        Terminal.write(config.renderedTOML(source: candidate.path))
    }
}
