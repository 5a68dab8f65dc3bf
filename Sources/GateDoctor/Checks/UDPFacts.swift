import GateCore

/// The ESP32's UDP address as an opening would judge it.
public enum UDPFacts: Sendable, Hashable {
    case verdict(IPAddress, LinkVerdict)
    case unresolved(String)
    /// The name service did not answer within `udp.timeout`.
    case lookupTimedOut(Duration)
    /// The interface table could not be read: an opening then treats the ESP32 as off-link.
    case noInterfaceTable(String)
}
