import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The sender half of `sd_notify(3)`: `READY=1`, `STATUS=…`, `RELOADING=1`,
/// `WATCHDOG=1`, `STOPPING=1` as datagrams to `$NOTIFY_SOCKET`.
///
/// Written out rather than linked from libsystemd, which `gate` does not
/// otherwise need: the protocol is one datagram of newline-separated
/// assignments. Each field must therefore be a single line; a line break inside
/// one (say in a `STATUS=` text) would make systemd read the rest as another
/// assignment.
///
/// The socket is opened once and each message goes out with `sendto` rather
/// than over a connected socket: systemd re-creates its notify socket when it
/// re-executes itself, and an address looked up afresh on every send reaches
/// the new one. Owns its descriptor and closes it.
public final class SystemdNotifier: Sendable {
    /// `$NOTIFY_SOCKET` as systemd gave it (`/run/systemd/notify`, `@name`), for messages.
    public let socketName: String
    private let fd: Int32
    /// What goes into `sun_path`, exactly as many bytes as the address length counts.
    private let pathBytes: [UInt8]

    private init(socketName: String, fd: Int32, pathBytes: [UInt8]) {
        self.socketName = socketName
        self.fd = fd
        self.pathBytes = pathBytes
    }

    deinit {
        close(fd)
    }

    /// The notifier for `$NOTIFY_SOCKET`, or `nil` when the variable is unset
    /// or empty (not started by systemd, or not as `Type=notify`).
    ///
    /// A value that is neither an absolute path nor `@name`, or too long for a
    /// socket address, is a failure naming the value: it is a broken unit or
    /// environment, which nobody would find if it were silently ignored.
    public static func fromEnvironment(_ environment: [String: String]) -> Result<SystemdNotifier?, SystemError> {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return .success(nil) }
        let pathBytes: [UInt8]
        switch addressBytes(for: name) {
        case .success(let bytes): pathBytes = bytes
        case .failure(let error): return .failure(error)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(SystemError("socket for $NOTIFY_SOCKET=\(name)")) }
        return .success(SystemdNotifier(socketName: name, fd: fd, pathBytes: pathBytes))
    }

    /// Sends `fields` (`READY=1`, `STATUS=…`) as one datagram, one per line.
    ///
    /// Returns the failure rather than throwing: a lost notification must not
    /// stop the daemon, and the caller decides whether it is worth a log line.
    @discardableResult
    public func send(_ fields: [String]) -> SystemError? {
        let message = Array(fields.joined(separator: "\n").utf8)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        // For an abstract name the length is the only end marker: a longer one
        // would make the trailing zeros part of the name and miss the socket.
        let length = socklen_t(Self.pathOffset + pathBytes.count)
        let sent = message.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                    retryingOnInterrupt { sendto(fd, bytes.baseAddress, bytes.count, 0, target, length) }
                }
            }
        }
        return sent >= 0 ? nil : SystemError("sendto \(socketName)", code: errno)
    }

    /// How often to send `WATCHDOG=1`, or `nil` when systemd does not watch
    /// this process: half of `$WATCHDOG_USEC`, as `sd_watchdog_enabled(3)`
    /// advises, so that one late ping does not get the service killed.
    ///
    /// `$WATCHDOG_PID`, when set, must be `pid`: the variables are inherited by
    /// children, which must not take the watchdog for their own.
    public static func watchdogInterval(environment: [String: String], pid: Int32) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else {
            return nil
        }
        if let owner = environment["WATCHDOG_PID"], Int32(owner) != pid { return nil }
        return .microseconds(Int64(clamping: microseconds)) / 2
    }

    /// `MONOTONIC_USEC=<CLOCK_MONOTONIC in µs>`: systemd wants it in the same
    /// datagram as `RELOADING=1`, to tell this reload from an earlier one.
    public static func monotonicUsecField() -> String {
        "MONOTONIC_USEC=\(MonotonicClock.now().nanoseconds / 1_000)"
    }

    private static let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
    private static let pathCapacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// The bytes of `sun_path` for `name`: a path with its terminating NUL, as
    /// systemd counts it, or for `@name` a NUL followed by the name.
    private static func addressBytes(for name: String) -> Result<[UInt8], SystemError> {
        let utf8 = Array(name.utf8)
        let bytes: [UInt8]
        if utf8.first == UInt8(ascii: "@"), utf8.count > 1 {
            bytes = [0] + utf8.dropFirst()
        } else if utf8.first == UInt8(ascii: "/"), !utf8.contains(0) {
            bytes = utf8 + [0]
        } else {
            return .failure(SystemError("$NOTIFY_SOCKET=\(name) (neither an absolute path nor @name)", code: EINVAL))
        }
        guard bytes.count <= pathCapacity else {
            return .failure(SystemError("$NOTIFY_SOCKET=\(name) (too long for a socket address)", code: ENAMETOOLONG))
        }
        return .success(bytes)
    }
}
