import Foundation
import GateTestSupport
import Testing

/// `gate key new` (docs/CONTRACT.md#gate-key) against a real Secret Service (gnome-keyring
/// on a private session bus), and the credential `esp32-key` read back through the same
/// lookup an opening uses.
@Suite("gate key new and the Secret Service", .serialized)
struct GateKeyTests {
    private func gatePath() throws -> String { try GateRunner.binary().path }

    /// The 64 lowercase hex digits and the newline that `gate key new` prints, or nil.
    private func printedKey(_ run: GateRun) -> String? {
        let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 2, lines[1].isEmpty, lines[0].utf8.count == 64,
            lines[0].utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        return String(lines[0])
    }

    @Test func drawsStoresAndPrintsOnceThenRefusesToReplaceWithoutForce() throws {
        let session = try SecretSession()
        let first = try session.run(try gatePath(), ["key", "new"])
        #expect(first.status == 0, "\(first.summary)")
        let key = try #require(printedKey(first), "stdout: \(first.stdout.debugDescription)")
        #expect(!first.stderr.contains(key), "the key is printed once, on stdout only")
        #expect(first.stderr.contains("esp32-key"), "\(first.stderr)")

        // Any libsecret client finds it under service=gate account=esp32-key.
        let looked = try session.secretToolLookup(account: "esp32-key")
        #expect(looked.status == 0 && looked.stdout.trimmingCharacters(in: .newlines) == key, "\(looked.summary)")
        // And gate's own lookup finds it there.
        let status = try session.run(try gatePath(), ["secret", "status", "esp32-key"])
        #expect(status.status == 0, "\(status.summary)")
        #expect(status.stdout.hasPrefix("esp32-key: from the Secret Service"), "\(status.stdout)")
        #expect(!status.stdout.contains(key) && !status.stderr.contains(key))

        let again = try session.run(try gatePath(), ["key", "new"])
        #expect(again.status == 73, "\(again.summary)")
        #expect(again.stdout.isEmpty, "no key is printed when none is stored")
        #expect(again.stderr.contains("--force") && again.stderr.contains("already"), "\(again.stderr)")
        #expect(try session.secretToolLookup(account: "esp32-key").stdout.trimmingCharacters(in: .newlines) == key)

        let forced = try session.run(try gatePath(), ["key", "new", "--force"])
        #expect(forced.status == 0, "\(forced.summary)")
        let replacement = try #require(printedKey(forced))
        #expect(replacement != key, "a new draw")
        #expect(
            try session.secretToolLookup(account: "esp32-key").stdout.trimmingCharacters(in: .newlines) == replacement
        )
        // The MQTT password's entry is another account: untouched, still absent.
        #expect(try session.secretToolLookup(account: "mqtt-password").stdout.isEmpty)
    }

    @Test func withoutASecretServiceItSaysHowToMakeTheSystemdCredential() throws {
        var environment = GateRunner.isolatedEnvironment()
        for key in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY"] {
            environment[key] = nil
        }
        let run = try SessionCommand.run(try gatePath(), ["key", "new"], stdin: nil, environment: environment)
        #expect(run.status == 78, "\(run.summary)")
        #expect(run.stdout.isEmpty, "nothing drawn, nothing printed")
        #expect(run.stderr.contains("no D-Bus session bus"), "\(run.stderr)")
        #expect(run.stderr.contains("systemd-creds encrypt --name=esp32-key"), "\(run.stderr)")
        #expect(run.stderr.contains("LoadCredentialEncrypted=esp32-key"), "\(run.stderr)")
    }

    @Test func aLockedKeyringIsSaidAndNothingIsPrinted() throws {
        let session = try SecretSession()
        try session.lockDefaultCollection()
        let run = try session.run(try gatePath(), ["key", "new"])
        #expect(run.status == 78, "\(run.summary)")
        #expect(run.stdout.isEmpty, "a key that was not stored is never printed")
        #expect(run.stderr.contains("locked"), "\(run.stderr)")
    }
}
