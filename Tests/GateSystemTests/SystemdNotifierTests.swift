import Plumbing
import Testing

@testable import GateSystem

#if canImport(Glibc)
import Glibc
#endif

/// A bound AF_UNIX datagram socket standing in for systemd's notify socket.
private final class NotifySocket {
    let fd: Int32
    /// What `$NOTIFY_SOCKET` would hold for it.
    let name: String
    private let directory: String?

    /// A socket file in a fresh folder under /tmp (short enough for `sun_path`
    /// whatever `$TMPDIR` says).
    static func inTemporaryDirectory() throws -> NotifySocket {
        var template = Array("/tmp/gate-notify-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        try #require(made != nil, "mkdtemp: \(SystemError.text(for: errno))")
        let directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return try NotifySocket(name: directory + "/notify", directory: directory)
    }

    static func abstract() throws -> NotifySocket {
        try NotifySocket(name: "@gate-test-\(String(UInt64.random(in: 1...UInt64.max), radix: 16))", directory: nil)
    }

    private init(name: String, directory: String?) throws {
        self.name = name
        self.directory = directory
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0, "socket: \(SystemError.text(for: errno))")
        // A test that sends nothing must fail, not hang.
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = name.hasPrefix("@") ? [0] + Array(name.utf8.dropFirst()) : Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        try #require(bound == 0, "bind \(name): \(SystemError.text(for: errno))")
    }

    deinit {
        close(fd)
        if let directory {
            unlink(name)
            rmdir(directory)
        }
    }

    /// The next datagram as text, or `nil` after two seconds without one.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count >= 0 { return String(decoding: buffer[0..<count], as: UTF8.self) }
            if errno != EINTR { return nil }
        }
    }
}

private func notifier(for name: String) throws -> SystemdNotifier {
    let made = try SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": name]).get()
    return try #require(made)
}

@Suite("systemd notification")
struct SystemdNotifierTests {
    @Test("Datagrams reach a socket file, in order, one per send")
    func pathSocket() throws {
        let socket = try NotifySocket.inTemporaryDirectory()
        let notifier = try notifier(for: socket.name)
        #expect(notifier.send(["READY=1"]) == nil)
        #expect(notifier.send(["STATUS=ready, watching the button"]) == nil)
        #expect(notifier.send(["STOPPING=1"]) == nil)
        #expect(socket.receive() == "READY=1")
        #expect(socket.receive() == "STATUS=ready, watching the button")
        #expect(socket.receive() == "STOPPING=1")
    }

    @Test("An @name reaches the abstract socket of that exact name")
    func abstractSocket() throws {
        let socket = try NotifySocket.abstract()
        let notifier = try notifier(for: socket.name)
        #expect(notifier.send(["READY=1"]) == nil)
        #expect(notifier.send(["STATUS=reloading"]) == nil)
        #expect(notifier.send(["STOPPING=1"]) == nil)
        #expect(socket.receive() == "READY=1")
        #expect(socket.receive() == "STATUS=reloading")
        #expect(socket.receive() == "STOPPING=1")
    }

    @Test("Several fields go out as one datagram; MONOTONIC_USEC is the monotonic clock in µs")
    func reloadingWithMonotonicTime() throws {
        let socket = try NotifySocket.inTemporaryDirectory()
        let before = MonotonicClock.now().nanoseconds / 1_000
        let field = SystemdNotifier.monotonicUsecField()
        let after = MonotonicClock.now().nanoseconds / 1_000
        #expect(try notifier(for: socket.name).send(["RELOADING=1", field]) == nil)
        let lines = try #require(socket.receive()).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2)
        #expect(lines.first == "RELOADING=1")
        let value = try #require(
            lines.last.flatMap { $0.hasPrefix("MONOTONIC_USEC=") ? UInt64($0.dropFirst(15)) : nil }
        )
        #expect(value >= before && value <= after)
    }

    @Test("A socket that is not there: the error names the path and the call")
    func missingSocket() throws {
        let socket = try NotifySocket.inTemporaryDirectory()
        let missing = socket.name + "-missing"
        let failure = try #require(try notifier(for: missing).send(["READY=1"]))
        #expect(failure.code == ENOENT)
        #expect(failure.description == "sendto \(missing): No such file or directory")
    }

    @Test("Unset or empty NOTIFY_SOCKET: no notifier, no failure")
    func notUnderSystemd() throws {
        #expect(try SystemdNotifier.fromEnvironment([:]).get() == nil)
        #expect(try SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": ""]).get() == nil)
    }

    @Test(
        "A value that is not a socket address is refused, naming it",
        arguments: ["run/systemd/notify", "notify", "@", "vsock:2:1234"]
    )
    func badValue(value: String) {
        guard case .failure(let failure) = SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": value]) else {
            Issue.record("accepted NOTIFY_SOCKET=\(value)")
            return
        }
        #expect(failure.code == EINVAL)
        #expect(failure.description.contains("$NOTIFY_SOCKET=\(value) "))
        #expect(failure.description.contains("absolute path"))
    }

    @Test("A value too long for sun_path is refused; the longest that fits is accepted")
    func tooLong() throws {
        // sun_path holds 108 bytes: a path and its terminating NUL, or a NUL and the abstract name.
        for longest in ["/" + String(repeating: "a", count: 106), "@" + String(repeating: "a", count: 107)] {
            #expect(try SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": longest]).get() != nil)
            let tooLong = longest + "a"
            guard case .failure(let failure) = SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": tooLong]) else {
                Issue.record("accepted a \(tooLong.utf8.count)-byte NOTIFY_SOCKET")
                continue
            }
            #expect(failure.code == ENAMETOOLONG)
            #expect(
                failure.description == "$NOTIFY_SOCKET=\(tooLong) (too long for a socket address): File name too long"
            )
        }
    }

    @Test("Watchdog: half of WATCHDOG_USEC, only for the process it names")
    func watchdog() {
        let interval = SystemdNotifier.watchdogInterval
        #expect(interval([:], 42) == nil)
        #expect(interval(["WATCHDOG_USEC": "0"], 42) == nil)
        #expect(interval(["WATCHDOG_USEC": ""], 42) == nil)
        #expect(interval(["WATCHDOG_USEC": "ten seconds"], 42) == nil)
        #expect(interval(["WATCHDOG_USEC": "-10000000"], 42) == nil)
        #expect(interval(["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "41"], 42) == nil)
        #expect(interval(["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "not a pid"], 42) == nil)
        #expect(interval(["WATCHDOG_USEC": "10000000"], 42) == .seconds(5))
        #expect(interval(["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "42"], 42) == .seconds(5))
        #expect(interval(["WATCHDOG_USEC": "3"], 42) == .nanoseconds(1_500))
    }
}
