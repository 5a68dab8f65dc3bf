import Foundation

/// A TCP port that completes the handshake (the kernel's backlog) and then says
/// nothing: a TLS handshake or an MQTT CONNECT sent there waits forever.
final class SilentTCPListener {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, ok else {
            close(fd)
            throw GateRunner.Failure("cannot listen: \(errno)")
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
    }

    deinit {
        close(fd)
    }
}
