/// Who asked for an opening (`cli`, `widget`, `button`…), as written to the status
/// file, the history and the logs.
public enum OpeningSource {
    /// 1 to 32 ASCII letters, digits, `-` or `_`: safe in every file and log line.
    public static func isValid(_ source: String) -> Bool {
        let allowed = source.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == 0x2d || byte == 0x5f
        }
        return !source.isEmpty && source.utf8.count <= 32 && allowed
    }

    /// The sources of the daemon's own openers (the button, Home Assistant, a cycle
    /// seen on the status topic): a request on the control socket never carries one,
    /// so that history and status show them only for what the daemon itself saw.
    public static let daemonOwn: Set<String> = ["button", "homeassistant", "elsewhere"]
}
