import Foundation

/// A UDP endpoint the test scripts by hand, standing where the ESP32 would be:
/// it sees gate's trigger and the port it came from, so a test can answer, stay
/// silent, or have a third party answer instead.
public final class FakeESP32 {
    public let fd: Int32
    public let port: UInt16

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw GateRunner.Failure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            close(fd)
            throw GateRunner.Failure("bind: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        close(fd)
    }

    /// Waits for one datagram; returns its bytes and the sender's port.
    public func receive(within timeout: Duration) throws -> (bytes: [UInt8], fromPort: UInt16)? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ms = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&pfd, 1, ms) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 512)
        var source = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &source) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        guard count >= 0 else { throw GateRunner.Failure("recvfrom: \(errno)") }
        return (Array(buffer[0..<count]), UInt16(bigEndian: source.sin_port))
    }

    /// Answers from the ESP32's own address and port.
    public func reply(_ bytes: [UInt8], toPort port: UInt16) throws {
        try Self.send(bytes, from: fd, toPort: port)
    }

    /// Sends from a fresh socket: another port on the same host, not the ESP32.
    public static func spoof(_ bytes: [UInt8], toPort port: UInt16) throws {
        let other = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(other) }
        try send(bytes, from: other, toPort: port)
    }

    private static func send(_ bytes: [UInt8], from fd: Int32, toPort port: UInt16) throws {
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        target.sin_port = port.bigEndian
        var payload = bytes
        let sent = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, &payload, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == bytes.count else { throw GateRunner.Failure("sendto: \(errno)") }
    }
}
