import GateCore
import Logging
import Mosquitto
import Plumbing
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why the link could not connect, for the log.
struct LinkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
