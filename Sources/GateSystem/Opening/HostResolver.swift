#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GateCore

/// Turns the configured host into an address to send to.
public enum HostResolver {
    /// An IP literal is used as it is; a name goes through `getaddrinfo` (which reads
    /// /etc/hosts and DNS) and the first address returned is used.
    public static func resolve(host: String, port: Int) -> Result<SocketAddress, ResolutionFailure> {
        addresses(host: host, port: port, socketType: Int32(SOCK_DGRAM.rawValue)).map { $0[0] }
    }

    /// Every address of `host`, in `getaddrinfo`'s order, for a caller that tries
    /// them in turn (a TCP connection); never empty on success.
    public static func addresses(host: String, port: Int, socketType: Int32) -> Result<[SocketAddress], ResolutionFailure> {
        guard let port16 = UInt16(exactly: port) else {
            return .failure(ResolutionFailure(message: "port \(port) is out of range"))
        }
        if let literal = IPAddress(literal: host) {
            return .success([SocketAddress(ip: literal, port: port16)])
        }
        var hints = addrinfo()
        hints.ai_socktype = socketType
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else {
            let words = gai_strerror(status).map { String(cString: $0) } ?? "error \(status)"
            return .failure(ResolutionFailure(message: "cannot resolve \(host): getaddrinfo: \(words)"))
        }
        var found: [SocketAddress] = []
        var cursor = list
        while let entry = cursor {
            if let sockaddr = entry.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(from: UnsafeRawBufferPointer(start: sockaddr, count: Int(entry.pointee.ai_addrlen)))
                }
                if let address = SocketAddress(storage: storage), !found.contains(where: { $0.ip == address.ip }) {
                    found.append(SocketAddress(ip: address.ip, port: port16))
                }
            }
            cursor = entry.pointee.ai_next
        }
        guard !found.isEmpty else {
            return .failure(ResolutionFailure(message: "cannot resolve \(host): getaddrinfo returned no IPv4 or IPv6 address"))
        }
        return .success(found)
    }
}
