import ArgumentParser
import GateCore
import GateSystem

struct ConfigPathCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "path",
        abstract: "Print the configuration file that would be used.",
        discussion: "With -v, also lists every place searched. Exit 78 when no file is found."
    )

    @OptionGroup var globals: GlobalOptions

    func run() throws {
        _ = globals.makeLogger()
        let locator = ConfigLocator(explicitPath: globals.config)
        if globals.verbose > 0 {
            for candidate in locator.candidates {
                Terminal.printError("gate: searched \(candidate.path) (\(candidate.origin.rawValue))")
            }
        }
        switch locator.locate() {
        case .success(let candidate):
            Terminal.printLine(candidate.path)
            if !FileStatus.exists(candidate.path) {
                Terminal.printError(
                    "gate: \(candidate.path) (from \(candidate.origin.rawValue)) does not exist\n"
                        + "Check the path, or write a starter file there with `gate config init --config \(candidate.path)`."
                )
                throw ExitCode(ExitStatus.configuration)
            }
        case .failure(let error):
            Terminal.printError("gate: \(error)\n\(error.nextStep)")
            throw ExitCode(ExitStatus.configuration)
        }
    }
}
