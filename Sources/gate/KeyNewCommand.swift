import ArgumentParser
import GateCore
import GateSystem
import GateV2
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

struct KeyNewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Draw a new ESP32 key, store it in the Secret Service and print it once.",
        discussion: """
            Draws 32 random bytes (getrandom), stores them as the credential esp32-key in \
            the Secret Service, and prints them once on standard output as 64 lowercase hex \
            digits: give those to the ESP32's firmware (menuconfig "v2 key", or NVS \
            key<ID> for [esp32] key_id = ID). A stored key is never replaced without \
            --force: the firmware would no longer accept this client's openings until it has \
            the new key too.

            Without a Secret Service (the system service, a headless machine) nothing is \
            drawn: the message gives the systemd-creds line that makes the credential \
            instead.

            Exit codes: 0 stored and printed; 64 bad command line; 73 a key is already \
            stored (nothing replaced, nothing printed); 74 stored but standard output could \
            not be written (run it again with --force); 78 the Secret Service cannot be used \
            (nothing printed).
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Flag(help: "Replace a stored key (the firmware then needs the new one).")
    var force = false

    static let credential = CredentialName.esp32Key

    func run() throws {
        let logger = globals.makeLogger()
        let store = try SecretReport.openStore("key new", advice: Self.systemdAdvice)
        try refuseToReplace(in: store)
        var digits = try drawDigits()
        defer { explicit_bzero(&digits, digits.count) }
        let secret = Secret(bytes: digits)
        var printed = digits + [0x0a]
        defer { explicit_bzero(&printed, printed.count) }
        do {
            try store.store(secret, account: Self.credential.rawValue, label: Self.credential.label)
        } catch {
            throw SecretReport.fail(
                "key new",
                "\(Self.credential.title) was not stored, and is not shown: \(error)",
                status: ExitStatus.configuration
            )
        }
        logger.info("key stored", metadata: ["account": "\(Self.credential.rawValue)"])
        // Printed once, and only once it is stored: a key the appliance does not hold
        // would only lock it out of the firmware that is given it.
        if let failure = Descriptor.writeAll(STDOUT_FILENO, printed) {
            throw SecretReport.fail(
                "key new",
                "the key was stored but could not be printed (\(failure)); run `gate key new --force`",
                status: 74
            )
        }
        Terminal.printError(
            "Stored a new ESP32 key in the Secret Service (\(SecretReport.item(Self.credential))). "
                + "Give the 64 digits above to the ESP32's firmware (menuconfig \"v2 key\", or NVS key<ID> for [esp32] key_id); they are not shown again."
        )
    }

    /// For the system service: draw the key into an encrypted credential, and show it
    /// once for the firmware. `od` and `tr` make the same 64 lowercase hex digits.
    static let systemdAdvice = """
        For the system service, make the systemd credential esp32-key instead (the unit's \
        LoadCredentialEncrypted=esp32-key finds it), and give the printed key to the firmware:
          key=$(head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \\n')
          printf '%s' "$key" | sudo sh -c 'umask 077 && systemd-creds encrypt --name=esp32-key - /etc/credstore.encrypted/esp32-key'
          echo "$key"; unset key
        """

    private func refuseToReplace(in store: SecretServiceStore) throws {
        let existing: Secret?
        do {
            existing = try store.lookup(account: Self.credential.rawValue)
        } catch {
            throw SecretReport.fail(
                "key new",
                "cannot tell whether a key is already stored: \(error)",
                status: ExitStatus.configuration
            )
        }
        guard existing != nil, !force else { return }
        throw SecretReport.fail(
            "key new",
            "an ESP32 key is already stored (Secret Service, account \(Self.credential.rawValue)); nothing was "
                + "replaced. A new key locks this client out until the firmware has it too: to replace it anyway, "
                + "run `gate key new --force`",
            status: 73
        )
    }

    private func drawDigits() throws -> [UInt8] {
        switch SystemRandom.bytes(V2KeyText.byteCount) {
        case .failure(let error):
            throw SecretReport.fail("key new", "cannot draw a key: \(error)", status: ExitStatus.software)
        case .success(var key):
            defer { explicit_bzero(&key, key.count) }
            guard let digits = V2KeyText.digits(of: key) else {
                throw SecretReport.fail("key new", "cannot write the key as hex digits", status: ExitStatus.software)
            }
            return digits
        }
    }
}
