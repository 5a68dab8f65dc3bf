import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Turns the configured host into an address to send to.
public enum HostResolver {
    /// An IP literal is used as it is; a name goes through `getaddrinfo` (which reads
    /// /etc/hosts and DNS) and the first address returned is used.
    public static func resolve(host: String, port: Int) -> Result<SocketAddress, ResolutionFailure> {
        addresses(host: host, port: port, socketType: Int32(SOCK_DGRAM.rawValue)).map { $0[0] }
    }

    /// Every address of `host`, in `getaddrinfo`'s order, for a caller that tries
    /// them in turn (a TCP connection); never empty on success.
    public static func addresses(
        host: String,
        port: Int,
        socketType: Int32
    ) -> Result<[SocketAddress], ResolutionFailure> {
        guard let port16 = UInt16(exactly: port) else {
            return .failure(ResolutionFailure(message: "port \(port) is out of range"))
        }
        if let literal = IPAddress(literal: host) {
            return .success([SocketAddress(ip: literal, port: port16)])
        }
        return AddressLookup.addresses(host: host, port: port16, socketType: socketType)
            .mapError { ResolutionFailure(message: "cannot resolve \(host): \($0)") }
    }
}
