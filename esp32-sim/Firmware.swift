/// What runs behind the transports: protocol 1's relay (the default, `Relay`) or protocol
/// 2's device (`--protocol 2`, `DeviceV2`, whose rules are the C core's).
enum Firmware: Sendable {
    case v1(Relay)
    case v2(DeviceV2)

    var isHeld: Bool {
        switch self {
        case .v1(let relay): relay.isHeld
        case .v2(let device): device.isHeld
        }
    }
}
