/// The things `gate doctor` checks, in the order it checks and prints them.
public enum DoctorCheck: String, Sendable, Hashable, CaseIterable {
    case config
    case runtime
    case state
    /// Which daemon serves the runtime folder's control socket (docs/CONTRACT.md#the-control-socket).
    case daemon
    case udp
    /// The ESP32 answers an ICMP echo, or its address is in the neighbour table.
    case esp32
    /// Under `[esp32] protocol = 2`: the ESP32 answers a signed status query (never an open).
    case v2
    case mqttPassword = "mqtt-password"
    case mqttTCP = "mqtt-tcp"
    case mqttConnect = "mqtt-connect"
    case gpio
    case homeassistant
    /// The desktop notification server on the session bus, for `[notify]` (docs/CONTRACT.md#desktop).
    case notify
}
