import Foundation
import Testing

@testable import GateSystem

@Suite("MQTT password lookup")
struct CredentialLookupTests {
    private func directory(with password: String?) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("creds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let password {
            try password.write(to: folder.appendingPathComponent("mqtt-password"), atomically: true, encoding: .utf8)
        }
        return folder.path
    }

    private func password(_ lookup: CredentialLookup) -> String? {
        guard case .success(let secret) = lookup.mqttPassword() else { return nil }
        return secret.withBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test("$CREDENTIALS_DIRECTORY/mqtt-password, trailing newline trimmed")
    func systemdCredential() throws {
        let folder = try directory(with: "s3cret pass\n")
        let lookup = CredentialLookup(sources: [SystemdCredentials(environment: ["CREDENTIALS_DIRECTORY": folder])])
        #expect(password(lookup) == "s3cret pass")
    }

    @Test("No credentials directory: the failure says how to provide one")
    func noDirectory() {
        let lookup = CredentialLookup(sources: [SystemdCredentials(environment: [:])])
        guard case .failure(let failure) = lookup.mqttPassword() else {
            Issue.record("a password was found where none exists")
            return
        }
        #expect(
            failure.message
                == "no MQTT password found: store one with `gate secret set mqtt-password`, or give the service the "
                + "systemd credential `mqtt-password` (LoadCredentialEncrypted=mqtt-password); -v shows where gate looked"
        )
        #expect(failure.looked == "systemd credentials: $CREDENTIALS_DIRECTORY is not set")
        #expect(failure.description.hasSuffix("(looked: systemd credentials: $CREDENTIALS_DIRECTORY is not set)"))
    }

    @Test("A directory without the file is 'no entry'; an empty file is refused")
    func missingAndEmpty() throws {
        let none = CredentialLookup(sources: [
            SystemdCredentials(environment: ["CREDENTIALS_DIRECTORY": try directory(with: nil)])
        ])
        guard case .failure(let missing) = none.mqttPassword() else {
            Issue.record("found a password in an empty directory")
            return
        }
        #expect(missing.looked == "systemd credentials: no entry")
        let empty = CredentialLookup(sources: [
            SystemdCredentials(environment: ["CREDENTIALS_DIRECTORY": try directory(with: "\n")])
        ])
        guard case .failure(let emptyFailure) = empty.mqttPassword() else {
            Issue.record("accepted an empty password")
            return
        }
        #expect(emptyFailure.message.contains("is empty"))
    }

    @Test("The first source that has it wins")
    func order() throws {
        struct Fixed: SecretSource {
            let name: String
            let value: String?
            func lookup(account: String) -> SecretLookup {
                value.map { .found(Secret(bytes: Array($0.utf8))) } ?? .notFound
            }
        }
        let lookup = CredentialLookup(sources: [
            Fixed(name: "a", value: nil), Fixed(name: "b", value: "second"), Fixed(name: "c", value: "third"),
        ])
        #expect(password(lookup) == "second")
    }

    @Test("A secret never prints")
    func redacted() {
        let secret = Secret(bytes: Array("hunter2".utf8))
        #expect("\(secret)" == "<redacted>")
        #expect(String(reflecting: secret) == "<redacted>")
    }
}
