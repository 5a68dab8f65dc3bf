import GateCore
import Logging
import Plumbing

/// Whether an address is on a directly connected network, from the interface table.
public enum LinkCheck {
    public static func verdict(
        for ip: IPAddress,
        interfaces: @Sendable () -> Result<[InterfaceAddress], SystemError>,
        logger: Logger
    ) -> LinkVerdict {
        if ip.isLoopback { return .loopback }
        switch interfaces() {
        case .success(let table):
            return LinkVerdict.of(ip, in: table)
        case .failure(let error):
            logger.warning(
                "cannot read the interface table; treating the ESP32 as off-link",
                metadata: ["error": "\(error)"]
            )
            return .offLink
        }
    }
}
