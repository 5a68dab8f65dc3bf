import Foundation

#if canImport(Glibc)
import Glibc
#endif

// What the daemon tests read and write besides the daemon process itself: the runtime
// files, configurations, and a stand-in for systemd's notification socket.

/// Reading what the daemon and `gate open` leave behind (docs/CONTRACT.md#runtime-files).
public enum DaemonFiles {
    public static func status(runtimeDirectory: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: runtimeDirectory + "/status.json"),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object
    }

    /// `last` of the status record, if any.
    public static func last(_ status: [String: Any]?) -> [String: Any]? {
        status?["last"] as? [String: Any]
    }

    public static func history(environment: [String: String]) throws -> [[String: Any]] {
        let run = try GateRunner.run(["history", "--json", "--limit", "100"], environment: environment)
        guard run.status == 0 else { throw GateRunner.Failure("gate history --json failed: \(run.summary)") }
        guard let entries = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [[String: Any]] else {
            throw GateRunner.Failure("gate history --json did not print an array of objects: \(run.stdout)")
        }
        return entries
    }
}

/// A configuration whose edits make no inotify event where the daemon looks, so that
/// only SIGHUP brings the daemon to read it again: `path` (what `--config` names) is a
/// hard link of `editPath` in another folder, and `replace` rewrites the shared inode in
/// place through `editPath`. (An event goes to the folder of the name a file is opened by;
/// the daemon watches the folders of `path` and of its symlink target, if any.)
public struct HardLinkedDaemonConfig {
    public let directory: URL
    public let path: String
    let editPath: String

    public init(_ text: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gate-config-\(UUID().uuidString)")
        let configFolder = directory.appendingPathComponent("etc")
        let editFolder = directory.appendingPathComponent("edit")
        try FileManager.default.createDirectory(at: configFolder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: editFolder, withIntermediateDirectories: true)
        path = configFolder.appendingPathComponent("gate.toml").path
        editPath = editFolder.appendingPathComponent("gate.toml").path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.linkItem(atPath: path, toPath: editPath)
    }

    /// Rewrites the file in place (same inode), never by rename, which would split the links.
    public func replace(_ text: String) throws {
        let fd = open(editPath, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard fd >= 0 else { throw GateRunner.Failure("cannot open \(editPath): errno \(errno)") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw GateRunner.Failure("cannot rewrite \(editPath): errno \(errno)")
        }
    }
}

/// A configuration reached through a symbolic link whose target lives in another folder
/// (a file kept in a repository, say): the daemon watches the target's folder too.
public struct SymlinkedDaemonConfig {
    public let directory: URL
    public let path: String
    public let target: String

    public init(_ text: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gate-config-\(UUID().uuidString)")
        let linkFolder = directory.appendingPathComponent("etc")
        let targetFolder = directory.appendingPathComponent("real")
        try FileManager.default.createDirectory(at: linkFolder, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: targetFolder, withIntermediateDirectories: true)
        path = linkFolder.appendingPathComponent("gate.toml").path
        target = targetFolder.appendingPathComponent("gate.toml").path
        try text.write(toFile: target, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
    }

    public func replace(_ text: String) throws {
        try text.write(toFile: target, atomically: true, encoding: .utf8)
    }
}

/// The text of a configuration for the daemon tests.
public func daemonConfigText(
    udpPort: UInt16?,
    mqttPort: UInt16? = nil,
    cooldown: Double? = nil,
    extra: String = ""
) -> String {
    var text = ""
    if let udpPort { text += "[udp]\nhost = \"127.0.0.1\"\nport = \(udpPort)\n" }
    if let mqttPort { text += "[mqtt]\nhost = \"127.0.0.1\"\nport = \(mqttPort)\n" }
    if let cooldown { text += "[runtime]\ncooldown = \(cooldown)\n" }
    return text + extra
}

/// A bound AF_UNIX SOCK_DGRAM socket standing in for systemd's `$NOTIFY_SOCKET`.
public final class NotifyListener {
    public let path: String
    private let directory: URL
    private let fd: Int32
    /// Every datagram received so far, in order.
    public private(set) var messages: [String] = []

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gate-notify-\(UUID().uuidString.prefix(8))"
        )
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("notify.sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DaemonProcess.Failure("socket(AF_UNIX, SOCK_DGRAM): errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw DaemonProcess.Failure("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw DaemonProcess.Failure("bind \(path): errno \(code)")
        }
    }

    deinit {
        close(fd)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Takes in every datagram already queued, without waiting.
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return }
            messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }

    /// Waits until `condition` holds for the messages received so far; wakes the moment a
    /// datagram arrives (poll(2)), so that a test can act right after, say, READY=1.
    @discardableResult
    public func waitFor(timeout: Duration = .seconds(15), _ condition: ([String]) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            drain()
            if condition(messages) { return true }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(
                &pfd,
                1,
                Int32(
                    min(
                        1000,
                        max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
                    )
                )
            )
        }
    }
}
