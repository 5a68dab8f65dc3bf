import Foundation

#if canImport(Glibc)
import Glibc
#endif

// What NeverTwiceTests needs beyond the shared fixtures: a slow resolver (LD_PRELOAD), a
// `gate open` that can be stopped with SIGTERM, the simulator's count of triggers it
// received (activations and ignored ones alike), and a few readers of `--json`.

/// Small helpers for the "never trigger twice" tests, namespaced so that they cannot clash
/// with the file-private helpers of other test files.
public enum NeverTwice {
    public static let triggerTopic = "iot/house/gate/esp32/trigger"
    public static let statusTopic = "iot/house/gate/esp32/status"

    /// The simulator's options to use `broker` as well as UDP.
    public static func simulatorMQTT(_ broker: MosquittoBroker) -> [String] {
        ["--mqtt-host", "127.0.0.1", "--mqtt-port", String(broker.port)]
    }

    /// The `attempts` array of `gate open --json`.
    public static func attempts(_ run: GateRun) throws -> [[String: Any]] {
        guard let attempts = try run.json()["attempts"] as? [[String: Any]] else {
            throw GateRunner.Failure("no \"attempts\" array in: \(run.stdout)")
        }
        return attempts
    }

    /// A JSON boolean (`true`/`false`) as JSONSerialization returns it; nil for anything else
    /// (missing, null, a number, a string), so that `"trigger_sent": 1` does not pass for true.
    public static func flag(_ value: Any?) -> Bool? {
        guard let value else { return nil }
        if type(of: value) == Bool.self { return value as? Bool }
        if let number = value as? NSNumber, String(cString: number.objCType) == "c" { return number.boolValue }
        return nil
    }

    /// `"trigger_sent"` of each attempt, in order (nil where it is missing or not a boolean).
    public static func triggerSent(_ attempts: [[String: Any]]) -> [Bool?] {
        attempts.map { flag($0["trigger_sent"]) }
    }

    public static func strings(_ attempts: [[String: Any]], _ key: String) -> [String?] {
        attempts.map { $0[key] as? String }
    }

    /// Sleeps until `instant` (at once if it has passed).
    public static func sleep(until instant: ContinuousClock.Instant) {
        let left = instant - ContinuousClock.now
        guard left > .zero else { return }
        let (seconds, attoseconds) = left.components
        Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Seconds, with milliseconds, for failure messages.
    public static func seconds(_ duration: Duration) -> String {
        let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return String(format: "%.3f s", Double(ms) / 1000)
    }

    /// The `at` of a trigger-log line (`2026-11-21T10:00:00.123Z`).
    public static func date(_ iso: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: iso)
    }
}

extension Simulator {
    /// Every trigger the simulator received, whether it activated the relay or was ignored
    /// because the relay was held: its "trigger received via udp|mqtt" log lines. A second
    /// trigger that lands inside the first one's hold makes no second activation, so this
    /// is what "the gate triggered twice" is counted by.
    public func receivedTriggers() -> [String] {
        stderrText.split(separator: "\n").map(String.init).filter { $0.contains("trigger received via ") }
    }
}

/// An `LD_PRELOAD` library that makes `getaddrinfo` slow for one host name, like a dead
/// resolver (NOTES.md "Timing and locks"), and leaves every other lookup alone.
///
/// For `host` it first appends one line to its `delayed.log` (so a test can tell the library was
/// loaded and hit, even if the process gives up on the lookup and exits while it sleeps),
/// sleeps `delay`, then answers what the real `getaddrinfo` answers for `answer` (an IP
/// literal), so that the result does not depend on the machine's /etc/hosts (::1 or not).
public final class SlowResolverShim {
    let preload: PreloadLibrary
    /// The `.so`, for `LD_PRELOAD`.
    public var library: String { preload.path }

    public init(host: String = "localhost", delayMs: Int, answer: String = "127.0.0.1") throws {
        preload = try PreloadLibrary(named: "slow-resolver") { folder in
            """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <errno.h>
            #include <fcntl.h>
            #include <netdb.h>
            #include <string.h>
            #include <time.h>
            #include <unistd.h>

            typedef int (*getaddrinfo_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

            int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
                getaddrinfo_fn real = (getaddrinfo_fn)dlsym(RTLD_NEXT, "getaddrinfo");
                if (real == NULL) return EAI_SYSTEM;
                if (node != NULL && strcmp(node, "\(host)") == 0) {
                    int fd = open("\(folder)/delayed.log", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                    if (fd >= 0) {
                        static const char line[] = "delayed \(host)\\n";
                        ssize_t ignored = write(fd, line, sizeof line - 1);
                        (void)ignored;
                        close(fd);
                    }
                    struct timespec left = { \(delayMs / 1000), \((delayMs % 1000) * 1_000_000)L };
                    while (nanosleep(&left, &left) == -1 && errno == EINTR) {}
                    return real("\(answer)", service, hints, res);
                }
                return real(node, service, hints, res);
            }

            """
        }
    }

    /// How many lookups of the host the library delayed so far.
    public var delayedLookups: Int {
        ((try? String(contentsOfFile: preload.file("delayed.log"), encoding: .utf8)) ?? "").split(separator: "\n").count
    }
}
