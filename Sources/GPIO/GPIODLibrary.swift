import CGPIOD

/// libgpiod's functions, loaded on first use (see CGPIOD/shim.h) so that no
/// command but the daemon's button pays for the library.
enum GPIODLibrary {
    private static let loaded: Result<GPIODAPI, GPIOError> = {
        var table = gate_gpiod_api()
        if let failure = gate_gpiod_load(&table) {
            return .failure(
                GPIOError(
                    "cannot load libgpiod",
                    call: "dlopen libgpiod.so.2",
                    words: String(cString: failure) + " (the button needs the package libgpiod2)"
                )
            )
        }
        return .success(GPIODAPI(table))
    }()

    /// The loaded library, or why it cannot be loaded, worded as the step `context`.
    static func api(for context: String) throws(GPIOError) -> GPIODAPI {
        switch loaded {
        case .success(let api): return api
        case .failure(let error): throw error.reworded(context)
        }
    }
}
