/// Where the ESP32 listens for UDP triggers.
public struct UDPConfig: Sendable, Equatable {
    public static let defaultPort = 8080
    public static let defaultTimeout: Double = 2.0
    /// The largest `udp.timeout` validation accepts.
    public static let maximumTimeout = 60

    /// An IPv4 or IPv6 literal (without brackets) or a host name.
    public var host: String
    public var port: Int
    /// Seconds for the complete cycle (`1` then `0`).
    public var timeout: Double

    public init(host: String, port: Int = UDPConfig.defaultPort, timeout: Double = UDPConfig.defaultTimeout) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }
}
