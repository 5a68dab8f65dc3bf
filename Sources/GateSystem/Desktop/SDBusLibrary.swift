import CSDBus
import GateCore
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// libsystemd's sd-bus functions, loaded on first use (see CSDBus/shim.h).
enum SDBusLibrary {
    static let loaded: Result<SDBusAPI, DesktopNotificationFailure> = {
        var table = gate_sdbus_api()
        if let failure = gate_sdbus_load(&table) {
            return .failure(
                .unavailable(
                    "libsystemd cannot be loaded (\(String(cString: failure))); install the package libsystemd0"
                )
            )
        }
        return .success(SDBusAPI(table: table))
    }()
}
