/// What the ESP32 reports about its relay (`1`/`0x01` and `0`/`0x00`).
public enum RelayState: Sendable, Hashable {
    case activated
    case released
}
