import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// The process at the other end of a Unix socket, as the kernel recorded it when
/// that end connected or started listening (`SO_PEERCRED`): not something the peer
/// can claim.
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    public var description: String { "pid \(pid), uid \(uid)" }

    /// `getsockopt(SO_PEERCRED)` on a connected Unix socket.
    public static func of(_ fd: Int32) -> Result<PeerCredentials, SystemError> {
        // struct ucred: pid_t, uid_t, gid_t (Glibc hides the type behind _GNU_SOURCE).
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: raw))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &raw, &length) == 0 else {
            return .failure(SystemError("getsockopt(SO_PEERCRED)"))
        }
        return .success(PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2))
    }
}
