import Glibc
import Plumbing

/// The way a trigger reached the relay.
enum Transport: String, CaseIterable, Sendable {
    case udp
    case mqtt
}

/// The `--trigger-log` file: one JSON line per relay activation, so that tests (and users
/// chasing "did the device really switch?") can count activations independently of what
/// the device reported.
///
/// Each line goes out in a single write(2) on an O_APPEND descriptor: the kernel then
/// places it whole at the end of the file, and a reader tailing the file never sees half
/// a line, even with several simulators appending to the same file.
final class TriggerLog: Sendable {
    let path: String
    private let fd: Int32

    init(path: String) throws(SystemError) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, mode_t(0o644))
        guard fd >= 0 else { throw SystemError("open \(path)") }
        self.path = path
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// Appends `{"via":…,"at":…,"from":…,"payload":…}`; `from` is left out when the transport
    /// has no sender address to give (MQTT), `payload` when the trigger carries none (UDP).
    /// Under `--protocol 2`, `identity` adds `"protocol":2,"key_id":…,"counter":…` (or
    /// `"protocol":1` for a v1 trigger), so that a test can check one activation per counter.
    /// Nil once written, else why not (for the caller's log: a device does not stop for it).
    func record(
        via transport: Transport,
        from sender: String?,
        payload: String? = nil,
        identity: ActivationIdentity? = nil
    ) -> SystemError? {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var line = #"{"via":"# + jsonString(transport.rawValue)
        line += #","at":"# + jsonString(iso8601UTC(time))
        if let sender {
            line += #","from":"# + jsonString(sender)
        }
        if let payload {
            line += #","payload":"# + jsonString(payload)
        }
        switch identity {
        case nil: break
        case .v1: line += #","protocol":1"#
        case .v2(let keyID, let counter): line += #","protocol":2,"key_id":\#(keyID),"counter":\#(counter)"#
        }
        line += "}\n"
        var bytes = Array(line.utf8)
        let count = bytes.count
        let written = retryingOnInterrupt { write(fd, &bytes, count) }
        // A short write cannot be completed without breaking the one-write-per-line promise,
        // so it is reported instead (it means a full disk, not something to retry).
        return written == count ? nil : SystemError("write \(path)", code: written < 0 ? errno : EIO)
    }
}

/// `2026-11-21T10:00:00.123Z`: UTC with milliseconds, the format the rest of the gate
/// project uses for timestamps in its files.
func iso8601UTC(_ time: timespec) -> String {
    var seconds = time.tv_sec
    var parts = tm()
    gmtime_r(&seconds, &parts)
    var text = [CChar](repeating: 0, count: 32)
    let count = strftime(&text, text.count, "%Y-%m-%dT%H:%M:%S", &parts)
    let date = String(decoding: text[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let milliseconds = String(time.tv_nsec / 1_000_000)
    return date + "." + String(repeating: "0", count: 3 - milliseconds.count) + milliseconds + "Z"
}

/// A JSON string literal. MQTT payloads go through here, and a quote or a control byte in
/// one must not corrupt the log.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default:
            out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
