import Foundation
import GateTestSupport
import GateV2
import Testing

@testable import GateSystem

/// The credential `esp32-key` (docs/CONTRACT.md#secrets) through the same lookup as the MQTT
/// password: `$CREDENTIALS_DIRECTORY/esp32-key` here (the Secret Service half is in
/// GateKeyTests, against a real gnome-keyring).
@Suite("The ESP32 key as a credential")
struct ESP32KeyCredentialTests {
    let vectors: V2Vectors

    init() throws {
        vectors = try V2Vectors()
    }

    private func directory(_ files: [String: String]) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("creds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, text) in files {
            try text.write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return folder.path
    }

    private func lookup(_ folder: String) -> CredentialLookup {
        CredentialLookup(sources: [SystemdCredentials(environment: ["CREDENTIALS_DIRECTORY": folder])])
    }

    @Test(arguments: ["", "\n", "\r\n"])
    func theFileHoldsTheHexDigitsInEitherCase(ending: String) throws {
        let material = try #require(vectors.materials["A"])
        let reference = try #require(V2Key(id: 4, hex: material.key))
        for text in [material.key, material.key.uppercased()] {
            let folder = try directory(["esp32-key": text + ending])
            let key = try lookup(folder).esp32Key(keyID: 4).get()
            #expect(key.id == 4)
            #expect(key.open(epoch: 9, counter: 1) == reference.open(epoch: 9, counter: 1))
        }
    }

    @Test func anUnusableKeyIsNamedByWhereItWasNeverByItsDigits() throws {
        let material = try #require(vectors.materials["A"])
        let short = String(material.key.dropLast())
        for text in [
            short, material.key + "\n\n", " " + material.key, material.key.replacingOccurrences(of: "0", with: "g"),
        ] {
            let folder = try directory(["esp32-key": text])
            guard case .failure(let failure) = lookup(folder).esp32Key(keyID: 1) else {
                Issue.record("\(text.debugDescription) was taken for a key")
                continue
            }
            #expect(failure.message.contains("from systemd credentials is not 64 hex digits"), "\(failure)")
            #expect(failure.message.contains("gate key new"))
            #expect(!failure.description.contains(short.prefix(16)), "the key's digits are never shown")
        }
    }

    @Test func withoutItTheSentenceSaysHowToProvideOne() throws {
        // The MQTT password's file is another credential: it never stands for the key.
        let folder = try directory(["mqtt-password": String(repeating: "ab", count: 32)])
        guard case .failure(let failure) = lookup(folder).esp32Key(keyID: 1) else {
            Issue.record("found a key where there is none")
            return
        }
        #expect(
            failure.message
                == "no ESP32 key found: draw one with `gate key new`, or give the service the systemd credential "
                + "`esp32-key` (LoadCredentialEncrypted=esp32-key); -v shows where gate looked"
        )
        #expect(failure.looked == "systemd credentials: no entry")
        // And the other way round: the key is not the MQTT password.
        let keyOnly = try directory(["esp32-key": String(repeating: "ab", count: 32)])
        guard case .failure = lookup(keyOnly).mqttPassword() else {
            Issue.record("the ESP32 key was taken for the MQTT password")
            return
        }
    }

    @Test func anEmptyFileIsRefusedNotSkipped() throws {
        let folder = try directory(["esp32-key": "\n"])
        guard case .failure(let failure) = lookup(folder).esp32Key(keyID: 1) else {
            Issue.record("an empty key file was accepted")
            return
        }
        #expect(failure.message.hasPrefix("the ESP32 key from systemd credentials cannot be used:"), "\(failure)")
        #expect(failure.message.contains("is empty"))
    }
}
