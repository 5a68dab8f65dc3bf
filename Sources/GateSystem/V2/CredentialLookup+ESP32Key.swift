import GateV2

extension CredentialLookup {
    /// Protocol v2's key, the credential `esp32-key` (docs/CONTRACT.md#secrets), for key id
    /// `keyID`: read as the C core reads a key (64 hex digits, either case, a trailing
    /// newline tolerated), or a sentence naming where it was found and what to do. The
    /// sentence never quotes it.
    public func esp32Key(keyID: UInt8) -> Result<V2Key, CredentialFailure> {
        switch located(.esp32Key) {
        case .failure(let failure):
            return .failure(failure)
        case .success(let found):
            // Exactly the 64 digits: a systemd credential's one trailing newline is already
            // gone (SystemdCredentials), and the core must not forgive a second one.
            let key = found.secret.withBytes { $0.count == V2KeyText.byteCount * 2 ? V2Key(id: keyID, text: $0) : nil }
            guard let key else {
                return .failure(
                    CredentialFailure(
                        message: "the ESP32 key from \(found.source) is not 64 hex digits; write it as "
                            + "`gate key new` prints it (the firmware must hold the same key)"
                    )
                )
            }
            return .success(key)
        }
    }
}
