#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `getaddrinfo(3)` for a host name: it reads /etc/hosts and asks DNS, and it
/// blocks (seconds, with a dead resolver), so callers with a deadline call it on a
/// thread of their own.
public enum AddressLookup {
    /// Every IPv4 and IPv6 address of `host` with `port`, in `getaddrinfo`'s order,
    /// without repeats; never empty on success. The failure is `getaddrinfo`'s own
    /// words (`getaddrinfo: Name or service not known`). `onlyConfiguredFamilies` is
    /// `AI_ADDRCONFIG`: no IPv6 address on a host without IPv6 (gate's rule for the
    /// ESP32 and the broker).
    public static func addresses(
        host: String,
        port: UInt16,
        socketType: Int32,
        onlyConfiguredFamilies: Bool = true
    ) -> Result<[SocketAddress], SystemError.Words> {
        var hints = addrinfo()
        hints.ai_socktype = socketType
        hints.ai_flags = onlyConfiguredFamilies ? AI_ADDRCONFIG : 0
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0 else {
            return .failure(
                SystemError.Words(
                    "getaddrinfo: " + (gai_strerror(status).map { String(cString: $0) } ?? "error \(status)")
                )
            )
        }
        var found: [SocketAddress] = []
        var cursor = list
        while let entry = cursor {
            if let sockaddr = entry.pointee.ai_addr {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { target in
                    target.copyMemory(
                        from: UnsafeRawBufferPointer(start: sockaddr, count: Int(entry.pointee.ai_addrlen))
                    )
                }
                if let address = SocketAddress(storage: storage),
                    !found.contains(where: { $0.addressBytes == address.addressBytes })
                {
                    found.append(SocketAddress(addressBytes: address.addressBytes, port: port)!)
                }
            }
            cursor = entry.pointee.ai_next
        }
        guard !found.isEmpty else {
            return .failure(SystemError.Words("getaddrinfo returned no IPv4 or IPv6 address"))
        }
        return .success(found)
    }
}
