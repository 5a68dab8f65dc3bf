import Foundation

/// A UDP endpoint the test scripts by hand, standing where the ESP32 would be:
/// it sees gate's trigger and the port it came from, so a test can answer, stay
/// silent, or have a third party answer instead.
public final class FakeESP32: Sendable {
    public let socket: LoopbackSocket
    public var fd: Int32 { socket.fd }
    public var port: UInt16 { socket.port }

    public init() throws {
        socket = try LoopbackSocket(.udp)
    }

    /// Waits for one datagram; returns its bytes and the sender's port.
    public func receive(within timeout: Duration) throws -> (bytes: [UInt8], fromPort: UInt16)? {
        guard let datagram = try socket.receive(waiting: timeout, capacity: 512) else { return nil }
        return (datagram.bytes, datagram.from?.port ?? 0)
    }

    /// Answers from the ESP32's own address and port.
    public func reply(_ bytes: [UInt8], toPort port: UInt16) throws {
        try socket.send(bytes, toPort: port)
    }

    /// Sends from a fresh socket: another port on the same host, not the ESP32.
    public static func spoof(_ bytes: [UInt8], toPort port: UInt16) throws {
        try LoopbackSocket(.udp).send(bytes, toPort: port)
    }
}
