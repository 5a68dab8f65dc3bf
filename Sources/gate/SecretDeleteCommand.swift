import ArgumentParser
import GateCore
import GateSystem

struct SecretDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete the MQTT password from the Secret Service.",
        discussion: """
            Deleting a password that is not there is not an error (exit 0, and it says so). \
            A systemd credential is not touched: it belongs to the service's unit. \
            Exit 78 when the Secret Service cannot be reached or its collection is locked.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Argument(help: ArgumentHelp("Which secret: mqtt-password or esp32-key.", valueName: "name"))
    var account: CredentialName

    func run() throws {
        let logger = globals.makeLogger()
        let store = try SecretReport.openStore("secret delete")
        let removed: Bool
        do {
            removed = try store.clear(account: account.rawValue)
        } catch {
            throw SecretReport.fail("secret delete", "\(error)", status: ExitStatus.configuration)
        }
        logger.info("secret deleted", metadata: ["account": "\(account.rawValue)", "removed": "\(removed)"])
        if removed {
            Terminal.printLine("Deleted \(account.title) from the Secret Service.")
        } else {
            Terminal.printLine("The Secret Service holds no \(account.rawValue) for gate: nothing to delete.")
        }
    }
}
