/// Exit statuses shared by every command (docs/CONTRACT.md#exit-codes).
public enum ExitStatus {
    public static let success: Int32 = 0
    public static let usage: Int32 = 64  // EX_USAGE
    public static let unavailable: Int32 = 69  // EX_UNAVAILABLE
    public static let software: Int32 = 70  // EX_SOFTWARE
    public static let temporaryFailure: Int32 = 75  // EX_TEMPFAIL
    public static let protocolError: Int32 = 76  // EX_PROTOCOL
    public static let configuration: Int32 = 78  // EX_CONFIG
    public static let timeout: Int32 = 124  // as timeout(1)
}
