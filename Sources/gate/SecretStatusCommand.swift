import ArgumentParser
import GateCore
import GateSystem

struct SecretStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Say where the MQTT password (or the ESP32 key) would come from, and whether it is there.",
        discussion: """
            Each source is asked in the order an opening asks them (systemd credential, then \
            the Secret Service); the password itself is never shown. Exit 0 when a usable \
            password was found, 78 when there is none (or the one found cannot be used).
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Argument(help: ArgumentHelp("Which secret: mqtt-password or esp32-key.", valueName: "name"))
    var account: CredentialName

    func run() throws {
        let logger = globals.makeLogger()
        let environment = ProcessEnvironment.current()
        let sources = AdapterFactory.credentials(environment: environment).sources
        var lines: [String] = []
        var verdict: String?
        var usable = false
        for (index, source) in sources.enumerated() {
            let state: String
            // The secret itself is dropped (and wiped) at the end of each case.
            switch source.lookup(account: account.rawValue) {
            case .found:
                state = "present" + location(of: source, environment: environment)
                if verdict == nil {
                    verdict = "from \(source.name)"
                    usable = true
                }
            case .notFound:
                state = "no entry"
            case .unavailable(let why):
                state = "not available: \(why)"
            case .failed(let why):
                state = "cannot be used: \(why)"
                if verdict == nil { verdict = "unusable (\(source.name) has one that cannot be used)" }
            }
            logger.debug(
                "secret source asked",
                metadata: ["source": "\(source.name)", "account": "\(account.rawValue)"]
            )
            lines.append("  \(index + 1). \(source.name): \(state)")
        }
        let heading = "\(account.rawValue): \(verdict ?? "nowhere")"
        Terminal.printLine(([heading] + lines).joined(separator: "\n"))
        guard usable else {
            if verdict == nil {
                Terminal.printError(
                    "gate secret status: no \(account.rawValue) found; store one with "
                        + "`\(account.storeCommand)` (desktop session, Secret Service), or, for the system "
                        + "service, provide the systemd credential `\(account.rawValue)` (LoadCredentialEncrypted=\(account.rawValue))"
                )
            }
            throw ExitCode(ExitStatus.configuration)
        }
    }

    private func location(of source: any SecretSource, environment: [String: String]) -> String {
        if source is SystemdCredentials, let directory = environment["CREDENTIALS_DIRECTORY"] {
            return " (\(directory)/\(account.rawValue))"
        }
        if source is SecretServiceSource {
            return " (\(SecretReport.item(account)))"
        }
        return ""
    }
}
