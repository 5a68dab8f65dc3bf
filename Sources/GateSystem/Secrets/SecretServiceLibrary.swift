import CLibSecret

/// libsecret's functions, loaded on first use (see CLibSecret/shim.h).
enum SecretServiceLibrary {
    private static let loaded: Result<SecretServiceAPI, SecretServiceFailure> = {
        var table = gate_secret_api()
        if let failure = gate_secret_load(&table) {
            return .failure(
                .unavailable(
                    "libsecret cannot be loaded (\(String(cString: failure))); "
                        + "install the package libsecret-1-0, or \(SessionBus.headlessAdvice)"
                )
            )
        }
        return .success(SecretServiceAPI(table: table))
    }()

    static func api() throws(SecretServiceFailure) -> SecretServiceAPI {
        try loaded.get()
    }
}
