import CMosquitto

/// libmosquitto's functions, loaded on first use (see CMosquitto/shim.h), with
/// `mosquitto_lib_init` run exactly once per process.
enum MosquittoLibrary {
    private static let loaded: Result<MosquittoAPI, MosquittoError> = {
        var table = gate_mosquitto_api()
        if let failure = gate_mosquitto_load(&table) {
            return .failure(
                MosquittoError(
                    call: "dlopen libmosquitto.so.1",
                    words: String(cString: failure) + " (MQTT needs the package libmosquitto1)"
                )
            )
        }
        let api = MosquittoAPI(table: table)
        _ = api.lib_init()
        return .success(api)
    }()

    /// The loaded library, or why it cannot be loaded.
    static func api() throws(MosquittoError) -> MosquittoAPI {
        try loaded.get()
    }
}
