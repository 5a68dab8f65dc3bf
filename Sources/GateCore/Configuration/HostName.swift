/// Host name rules of RFC 1123, used to refuse a typo before anything is sent.
public enum HostName {
    /// Why `text` is not a usable host (an IP literal or a DNS name), or `nil` when it is.
    public static func problem(with text: String) -> String? {
        if text.isEmpty { return "is empty" }
        if IPAddress(literal: text) != nil { return nil }
        if text.hasPrefix("[") || text.contains(":") {
            return "\"\(text)\" is not a valid IPv6 address"
        }
        if text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2e }) {
            return "\"\(text)\" is not a valid IPv4 address"
        }
        var name = Substring(text)
        if name.hasSuffix(".") { name = name.dropLast() }
        if name.utf8.count > 253 { return "host name is longer than 253 characters" }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { return "\"\(text)\" has an empty label" }
            if label.utf8.count > 63 { return "label \"\(label)\" is longer than 63 characters" }
            let allowed = label.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a)
                    || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d
            }
            if !allowed {
                return "\"\(text)\" is not a host name (letters, digits, hyphens and dots only)"
            }
            if label.hasPrefix("-") || label.hasSuffix("-") {
                return "label \"\(label)\" starts or ends with a hyphen"
            }
        }
        return nil
    }
}
