import ArgumentParser
import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
import Plumbing
#endif

struct SecretSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Store the MQTT password in the Secret Service.",
        discussion: """
            On a terminal the password is asked for twice, without echo. Otherwise it is \
            read from standard input, up to its end, one trailing newline removed: \
            `printf '%s' \"$PW\" | gate secret set mqtt-password`, or \
            `gate secret set mqtt-password < file`. It is never taken as an argument, \
            where any user could read it in the process list. An empty password, one of \
            several lines, or one that is not UTF-8 text is refused (exit 64). A stored \
            password is replaced.

            Exit 78 when the Secret Service cannot be reached (no session bus: on a headless \
            machine use the systemd credential instead) or its collection is locked.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Argument(help: ArgumentHelp("Which secret: mqtt-password or esp32-key.", valueName: "name"))
    var account: CredentialName

    func run() throws {
        let logger = globals.makeLogger()
        if account == .esp32Key {
            throw SecretReport.fail(
                "secret set",
                "the ESP32 key is drawn, stored and printed by `gate key new` (a typed key is too easily a weak one)",
                status: ExitStatus.usage
            )
        }
        // Reach the Secret Service first: nobody should type a password that cannot be stored.
        let store = try SecretReport.openStore("secret set")
        let secret: Secret
        switch PasswordInput.read(fromTerminal: Terminal.isTerminal(STDIN_FILENO), prompt: "MQTT password: ") {
        case .success(let read):
            secret = read
        case .failure(let problem):
            throw SecretReport.fail("secret set", problem.message, status: ExitStatus.usage)
        }
        do {
            try store.store(secret, account: account.rawValue, label: account.label)
        } catch {
            throw SecretReport.fail(
                "secret set",
                "\(account.title) was not stored: \(error)",
                status: ExitStatus.configuration
            )
        }
        logger.info(
            "secret stored",
            metadata: ["account": "\(account.rawValue)", "schema": "\(SecretServiceStore.schemaName)"]
        )
        Terminal.printLine(
            "Stored \(account.title) in the Secret Service (\(SecretReport.item(account)))."
        )
    }
}
