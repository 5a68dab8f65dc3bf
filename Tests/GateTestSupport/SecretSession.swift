import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private D-Bus session bus with an unlocked gnome-keyring (a real Secret Service) and a
/// throwaway HOME, for one test (NOTES.md, "Secret Service without a desktop").
///
///     let session = try SecretSession()
///     let set = try session.run(try GateRunner.binary().path, ["secret", "set", "mqtt-password"], stdin: "pw\n")
///     let env = session.environment()                       // GateRunner.isolatedEnvironment() + the bus
///     let open = try GateRunner.run(["open", "--via", "mqtt", "--config", path], environment: env)
///
/// With `notificationServer`, the session also has a real freedesktop notification
/// server: dunst on its own Xvfb display (`dunstctl history` says what it showed).
///
/// `dbus-run-session` runs a small sh script that unlocks the keyring (`printf pw |
/// gnome-keyring-daemon --unlock --components=secrets`), waits until the keyring owns
/// `org.freedesktop.secrets`, writes the bus address and both daemons' pids to a file, and
/// then waits. Commands join the session through `DBUS_SESSION_BUS_ADDRESS`, so `gate` can be
/// started (and its /proc sampled) like any other child of the test. The script also watches
/// the test process: if that dies without running `deinit`, the keyring goes and
/// dbus-run-session takes the bus down with it. `deinit` stops it all, bounded, and SIGKILLs
/// whatever is left.
public final class SecretSession {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// The session bus (`unix:path=...` or `unix:abstract=...`).
    let busAddress: String
    let busPID: Int32
    let keyringPID: Int32
    /// Xvfb's and dunst's pids, with `notificationServer`.
    let displayPIDs: [Int32]
    /// The keyring's HOME (its files live under `.local/share/keyrings`).
    public let home: URL
    public let directory: URL

    private let session: MosquittoBroker.Child
    private let stopFile: String
    private let logFile: String

    /// The keyring's own password (not a secret under test).
    static let keyringPassword = "session-keyring-pw"

    public init(readyTimeout: Duration = .seconds(20), notificationServer: Bool = false) throws {
        for tool in ["/usr/bin/dbus-run-session", "/usr/bin/gnome-keyring-daemon", "/usr/bin/dbus-send"] {
            guard FileManager.default.isExecutableFile(atPath: tool) else {
                throw Failure("\(tool) is missing: the Secret Service tests need the packages dbus and gnome-keyring")
            }
        }
        if notificationServer {
            for tool in ["/usr/bin/Xvfb", "/usr/bin/dunst", "/usr/bin/dunstctl"] {
                guard FileManager.default.isExecutableFile(atPath: tool) else {
                    throw Failure("\(tool) is missing: the notification tests need the packages xvfb and dunst")
                }
            }
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-secret-session-\(UUID().uuidString)"
        )
        home = directory.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("session.sh").path
        let readyFile = directory.appendingPathComponent("ready").path
        stopFile = directory.appendingPathComponent("stop").path
        logFile = directory.appendingPathComponent("session.log").path
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)

        // A clean environment: no desktop's DISPLAY or bus, the throwaway HOME.
        session = try MosquittoBroker.Child(
            "/usr/bin/env",
            [
                "-i", "HOME=\(home.path)", "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
                "/usr/bin/dbus-run-session", "--", "/bin/sh", script, readyFile, stopFile, String(getpid()),
                Self.keyringPassword,
                notificationServer ? "notify" : "",
            ],
            stdout: URL(fileURLWithPath: logFile),
            stderr: URL(fileURLWithPath: logFile),
            watchdog: false
        )

        let deadline = ContinuousClock.now + readyTimeout
        var lines: [String] = []
        while true {
            if let text = try? String(contentsOfFile: readyFile, encoding: .utf8) {
                lines = text.split(separator: "\n").map(String.init)
                if lines.count == (notificationServer ? 5 : 3) { break }
            }
            if !session.isRunning || ContinuousClock.now >= deadline {
                let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
                session.terminate(grace: .seconds(2))
                try? FileManager.default.removeItem(at: directory)
                throw Failure("the Secret Service session did not come up within \(readyTimeout); its log:\n\(log)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        busAddress = lines[0]
        busPID = Int32(lines[1]) ?? 0
        keyringPID = Int32(lines[2]) ?? 0
        displayPIDs = lines.dropFirst(3).map { Int32($0) ?? 0 }
    }

    deinit {
        _ = FileManager.default.createFile(atPath: stopFile, contents: nil)
        if !session.waitForExit(within: .seconds(5)) {
            session.terminate(grace: .zero)
        }
        // dbus-run-session ends the bus and the script ends the keyring; make sure of both.
        let display = displayPIDs.count == 2 ? [(displayPIDs[1], "dunst"), (displayPIDs[0], "Xvfb")] : []
        for (pid, command) in display + [(keyringPID, "gnome-keyring-d"), (busPID, "dbus-daemon")] {
            Self.killIfRunning(pid, command: command)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The session's daemons' log (dbus-daemon, gnome-keyring), for failure messages.
    public var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// `base` (a `GateRunner.isolatedEnvironment()` by default) joined to this session's bus,
    /// without any display a prompt could use.
    public func environment(_ base: [String: String] = GateRunner.isolatedEnvironment()) -> [String: String] {
        var environment = base
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        for key in ["DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR"] { environment[key] = nil }
        return environment
    }

    /// Runs `executable` inside the session to completion (killed and thrown after `timeout`),
    /// with `stdin` as its standard input (empty when nil).
    public func run(
        _ executable: String,
        _ arguments: [String],
        stdin: String? = nil,
        environment: [String: String]? = nil,
        timeout: Duration = .seconds(30)
    ) throws -> GateRun {
        try SessionCommand.run(
            executable,
            arguments,
            stdin: stdin,
            environment: environment ?? self.environment(),
            timeout: timeout
        )
    }

    /// `secret-tool lookup service gate account <account>` inside the session: the entry as
    /// any other libsecret client sees it.
    public func secretToolLookup(account: String = "mqtt-password") throws -> GateRun {
        try run("/usr/bin/secret-tool", ["lookup", "service", "gate", "account", account])
    }

    /// `secret-tool store` inside the session: an entry made by another client.
    func secretToolStore(_ password: String, attributes: [String]) throws -> GateRun {
        try run("/usr/bin/secret-tool", ["store", "--label=made by secret-tool"] + attributes, stdin: password)
    }

    /// Locks the keyring's login collection (the default one) through the Secret Service
    /// API, as a screen lock or a timeout would. Without a display it cannot be unlocked again
    /// by a prompt.
    public func lockDefaultCollection() throws {
        let run = try self.run(
            "/usr/bin/dbus-send",
            [
                "--session", "--print-reply", "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.Lock", "array:objpath:/org/freedesktop/secrets/collection/login",
            ]
        )
        guard run.status == 0 else { throw Failure("cannot lock the keyring: \(run.summary)") }
    }

    /// `dunstctl history`: the notifications dunst closed (call `closeAllNotifications`
    /// first for those still shown), newest first, as `(id, summary, body)`.
    public func notificationHistory() throws -> [(id: Int, summary: String, body: String)] {
        let run = try self.run("/usr/bin/dunstctl", ["history"])
        guard run.status == 0,
            let json = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
            let lists = json["data"] as? [[[String: Any]]]
        else {
            throw Failure("dunstctl history: \(run.summary)")
        }
        return lists.flatMap { $0 }.map { entry in
            func field(_ name: String) -> Any? { (entry[name] as? [String: Any])?["data"] }
            return ((field("id") as? Int) ?? -1, (field("summary") as? String) ?? "", (field("body") as? String) ?? "")
        }
    }

    /// `dunstctl count displayed`: how many notifications dunst shows right now.
    public func displayedNotifications() throws -> Int {
        let run = try self.run("/usr/bin/dunstctl", ["count", "displayed"])
        guard run.status == 0, let count = Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Failure("dunstctl count displayed: \(run.summary)")
        }
        return count
    }

    /// Ends dunst, as a notification server that crashed or was quit: the bus stays.
    public func stopNotificationServer() throws {
        guard displayPIDs.count == 2 else {
            throw Failure("this session has no notification server (notificationServer: false)")
        }
        Self.killIfRunning(displayPIDs[1], command: "dunst")
    }

    /// `dunstctl close-all`: every shown notification goes into the history.
    public func closeAllNotifications() throws {
        let run = try self.run("/usr/bin/dunstctl", ["close-all"])
        guard run.status == 0 else { throw Failure("dunstctl close-all: \(run.summary)") }
    }

    private static func killIfRunning(_ pid: Int32, command: String) {
        guard pid > 0 else { return }
        func alive() -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                stat.contains("(\(command))")
            else { return false }
            // A zombie is gone for our purposes (nobody may be reaping it here).
            return stat.split(separator: ")").last?.split(separator: " ").first != "Z"
        }
        guard alive() else { return }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + .seconds(2)
        while alive(), ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if alive() { kill(pid, SIGKILL) }
    }

    /// $1 ready file, $2 stop file, $3 the test process's pid, $4 the keyring's password,
    /// $5 `notify` for a notification server (Xvfb picks a free display and says which).
    /// dash: no `<<<`, no arrays.
    private static let script = #"""
        ready=$1 stop=$2 owner=$3
        printf '%s' "$4" | gnome-keyring-daemon --unlock --components=secrets >/dev/null || exit 1
        has_owner() {
            dbus-send --session --print-reply --dest=org.freedesktop.DBus / \
                org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q 'boolean true'
        }
        pid_of() {
            dbus-send --session --print-reply=literal --dest=org.freedesktop.DBus / \
                org.freedesktop.DBus.GetConnectionUnixProcessID "string:$1" | awk '{ print $2 }'
        }
        tries=0
        until has_owner org.freedesktop.secrets; do
            tries=$((tries + 1))
            [ "$tries" -gt 150 ] && { echo "gnome-keyring never owned org.freedesktop.secrets" >&2; exit 2; }
            sleep 0.1
        done
        keyring=$(pid_of org.freedesktop.secrets)
        bus=$(pid_of org.freedesktop.DBus)
        printf '%s\n%s\n%s\n' "$DBUS_SESSION_BUS_ADDRESS" "$bus" "$keyring" > "$ready.tmp"
        if [ -n "$5" ]; then
            Xvfb -displayfd 3 -screen 0 800x600x24 -nolisten tcp 3>"$ready.display" >/dev/null 2>&1 &
            xvfb=$!
            tries=0
            until [ -s "$ready.display" ]; do
                tries=$((tries + 1))
                [ "$tries" -gt 100 ] && { echo "Xvfb did not start" >&2; kill "$keyring" "$xvfb"; exit 3; }
                sleep 0.1
            done
            DISPLAY=":$(head -n 1 "$ready.display")" dunst -conf /dev/null >/dev/null 2>&1 &
            dunst=$!
            tries=0
            until has_owner org.freedesktop.Notifications; do
                tries=$((tries + 1))
                [ "$tries" -gt 100 ] && { echo "dunst never owned org.freedesktop.Notifications" >&2; kill "$keyring" "$dunst" "$xvfb"; exit 4; }
                sleep 0.1
            done
            printf '%s\n%s\n' "$xvfb" "$dunst" >> "$ready.tmp"
        fi
        mv "$ready.tmp" "$ready"
        # Until told to stop, or until the test process is gone (or a zombie nobody reaps).
        while [ ! -e "$stop" ]; do
            state=$(sed 's/.*) //' "/proc/$owner/stat" 2>/dev/null | cut -d' ' -f1)
            [ -z "$state" ] || [ "$state" = Z ] && break
            sleep 0.1
        done
        kill "$keyring" 2>/dev/null
        [ -n "$5" ] && kill "$dunst" "$xvfb" 2>/dev/null
        exit 0
        """#
}

/// Child processes for the Secret Service tests: standard input from a string or a terminal,
/// output captured in files, a bounded wait, and an empty signal mask (test code runs on
/// threads that block most signals, and a child would inherit that: a SIGINT sent to it
/// would never arrive).
public enum SessionCommand {
    public static func run(
        _ executable: String,
        _ arguments: [String],
        stdin: String?,
        environment: [String: String],
        timeout: Duration = .seconds(30)
    ) throws -> GateRun {
        try run(executable, arguments, input: Data((stdin ?? "").utf8), environment: environment, timeout: timeout)
    }

    /// Like `run(_:_:stdin:environment:timeout:)`, with any bytes as standard input.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        input: Data,
        environment: [String: String],
        timeout: Duration = .seconds(30)
    ) throws -> GateRun {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-secret-run-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inputURL = scratch.appendingPathComponent("stdin")
        let out = scratch.appendingPathComponent("stdout")
        let err = scratch.appendingPathComponent("stderr")
        for url in [inputURL, out, err] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        try input.write(to: inputURL)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let started = ContinuousClock.now
        let exited = try spawn(process)
        closeFileStreams(of: process)
        guard wait(exited, timeout: timeout) else {
            kill(process.processIdentifier, SIGKILL)
            _ = wait(exited, timeout: .seconds(5))
            throw SecretSession.Failure(
                "\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout)"
            )
        }
        return GateRun(
            status: process.terminationStatus,
            stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "",
            wall: ContinuousClock.now - started
        )
    }

    /// Starts `process` from a short-lived thread whose signal mask is empty; the semaphore
    /// is signalled when it exits.
    public static func spawn(_ process: Process) throws -> DispatchSemaphore {
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try runWithSignalsUnblocked(process)
        return exited
    }

    public static func wait(_ exited: DispatchSemaphore, timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline =
            DispatchTime.now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        return exited.wait(timeout: deadline) == .success
    }
}

/// A pseudo-terminal: the test holds the master side, a child gets the slave side as its
/// standard input, output and error, and sees a real terminal (isatty, termios).
public final class PseudoTerminal {
    let master: Int32
    let slave: Int32
    let slavePath: String

    public init() throws {
        // posix_openpt and friends are not in Swift's Glibc module: take them from libc.
        typealias FDCall = @convention(c) (Int32) -> Int32
        typealias NameCall = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
        func libc<T>(_ name: String, as type: T.Type) throws -> T {
            guard let symbol = dlsym(nil, name) else { throw SecretSession.Failure("libc has no \(name)") }
            return unsafeBitCast(symbol, to: type)
        }
        let openpt = try libc("posix_openpt", as: FDCall.self)
        let grant = try libc("grantpt", as: FDCall.self)
        let unlock = try libc("unlockpt", as: FDCall.self)
        let name = try libc("ptsname_r", as: NameCall.self)
        master = openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
        var path = [CChar](repeating: 0, count: 128)
        guard master >= 0, grant(master) == 0, unlock(master) == 0, name(master, &path, path.count) == 0 else {
            let words = String(cString: strerror(errno))
            if master >= 0 { close(master) }
            throw SecretSession.Failure("cannot open a pseudo-terminal: \(words)")
        }
        slavePath = String(decoding: path.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        slave = open(slavePath, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else {
            close(master)
            throw SecretSession.Failure("cannot open \(slavePath): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        close(slave)
        close(master)
    }

    /// The handle to give a child (the child gets its own copy of the descriptor).
    public var slaveHandle: FileHandle { FileHandle(fileDescriptor: slave, closeOnDealloc: false) }

    /// Whether the terminal echoes what is typed now.
    public var echoes: Bool {
        var settings = termios()
        guard tcgetattr(slave, &settings) == 0 else { return false }
        return settings.c_lflag & tcflag_t(ECHO) != 0
    }

    /// Everything the child wrote (and the terminal echoed) so far, read until `text` shows
    /// up or `timeout` passes. Returns what was read and whether `text` was seen.
    public func read(until text: String, timeout: Duration = .seconds(10)) -> (String, Bool) {
        let deadline = ContinuousClock.now + timeout
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while true {
            let seen = String(decoding: bytes, as: UTF8.self)
            if seen.contains(text) { return (seen, true) }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return (seen, false) }
            var pfd = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(
                max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            )
            let ready = poll(&pfd, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return (seen, false) }
            let count = Glibc.read(master, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return (seen, false) }
            bytes += chunk[..<count]
        }
    }

    /// Types `text` as if at the keyboard.
    public func type(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.write(master, &bytes, bytes.count)
    }
}
