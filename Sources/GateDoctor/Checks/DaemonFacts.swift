import GateControl
import GateCore

/// Who answers on the runtime folder's control socket.
public enum DaemonFacts: Sendable, Hashable {
    /// No `control.sock`.
    case absent(socket: String)
    /// A socket nobody answers on (left by a daemon that was killed).
    case stale(socket: String)
    /// A daemon `gate open` trusts answered `who`; `peerUID` is the kernel's word
    /// for who listens.
    case answered(ControlDaemon, peerUID: UInt32, socket: String)
    /// A listener of another user: `gate open` ignores it.
    case untrusted(pid: Int32, uid: UInt32, socket: String)
    /// Something else is there, or the exchange failed.
    case unusable(socket: String, why: String)
}
