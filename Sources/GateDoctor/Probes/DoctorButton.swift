import GPIO
import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `gate doctor`'s GPIO check: request the button's line as the daemon does and
/// release it at once. Here, beside the daemon, because only they load libgpiod.
public enum DoctorButton {
    /// The consumer name `gpioinfo` shows for the instant the doctor holds the line.
    static let consumer = "gate-doctor"

    public static func probe(_ button: ButtonConfig) -> ButtonFacts {
        do {
            // Released by deinit as soon as this scope ends: a daemon starting at the
            // same moment finds the line free again at once.
            let line = try ButtonLine.open(
                chip: button.chip,
                line: UInt32(clamping: button.line),
                activeLow: button.activeLow,
                consumer: consumer
            )
            withExtendedLifetime(line) {}
            return .opened
        } catch {
            return facts(for: error)
        }
    }

    static func facts(for error: GPIOError) -> ButtonFacts {
        let words = error.description
        let code = error.code
        if code < 0 { return .libraryMissing(words) }
        if code == EACCES || code == EPERM { return .permissionDenied(words) }
        if code == EBUSY { return .busy(daemonPID: runningDaemon(), words: words) }
        if error.call == "gpiod_chip_open_lookup", code == ENOENT || code == ENODEV || code == ENOTDIR {
            return .noChip(words: words, present: presentChips())
        }
        if error.call == "gpiod_chip_get_line", code == EINVAL { return .noLine(words) }
        return .failed(words)
    }

    /// The GPIO character devices of this machine (`gpiochip0`, …), sorted.
    static func presentChips() -> [String] {
        names(in: "/dev").filter { $0.hasPrefix("gpiochip") }.sorted()
    }

    /// The pid of a running `gate daemon` other than this process, read from /proc:
    /// a line held by it is the button working, not a conflict. Processes this
    /// account may not see (hidepid) are not found, and the line is then reported busy.
    static func runningDaemon() -> Int32? {
        let me = getpid()
        for name in names(in: "/proc") {
            guard let pid = Int32(name), pid != me else { continue }
            guard case .success(let bytes) = FileBytes.read("/proc/\(name)/cmdline", limit: 4096) else { continue }
            let arguments = bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard let program = arguments.first, program == "gate" || program.hasSuffix("/gate") else { continue }
            if arguments.dropFirst().contains("daemon") { return pid }
        }
        return nil
    }

    /// The entries of a folder; none when it cannot be read.
    private static func names(in path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            names.append(name)
        }
        return names
    }
}
