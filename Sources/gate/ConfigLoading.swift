import ArgumentParser
import GateCore
import GateSystem

/// Loading shared by the `config` subcommands: problems to stderr, exit 78.
enum ConfigLoading {
    static func load(_ globals: GlobalOptions) throws -> (GateConfig, ConfigLocator.Candidate) {
        _ = globals.makeLogger()
        switch ConfigLocator(explicitPath: globals.config).load() {
        case .success(let loaded):
            return loaded
        case .failure(let error):
            Terminal.printError((error.problems.map { "gate: \($0)" } + [error.nextStep]).joined(separator: "\n"))
            throw ExitCode(ExitStatus.configuration)
        }
    }
}
