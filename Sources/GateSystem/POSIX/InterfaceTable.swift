import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The machine's interface addresses, read with `getifaddrs`, for the on-link check.
public enum InterfaceTable {
    public static func current() -> Result<[InterfaceAddress], SystemError> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return .failure(SystemError("getifaddrs")) }
        defer { freeifaddrs(list) }
        var table: [InterfaceAddress] = []
        var cursor = list
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, let netmask = entry.pointee.ifa_netmask else { continue }
            guard let ip = ipAddress(address), let mask = ipAddress(netmask), ip.family == mask.family else { continue }
            let flags = Int32(bitPattern: entry.pointee.ifa_flags)
            table.append(
                InterfaceAddress(
                    name: String(cString: entry.pointee.ifa_name),
                    isUp: flags & Int32(IFF_UP) != 0 && flags & Int32(IFF_RUNNING) != 0,
                    isLoopback: flags & Int32(IFF_LOOPBACK) != 0,
                    address: ip,
                    netmask: mask
                )
            )
        }
        return .success(table)
    }

    private static func ipAddress(_ pointer: UnsafeMutablePointer<sockaddr>) -> IPAddress? {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { raw in
                var address = raw.pointee.sin_addr
                return IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) })
            }
        case AF_INET6:
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { raw in
                var address = raw.pointee.sin6_addr
                return IPAddress(bytes: withUnsafeBytes(of: &address) { Array($0) })
            }
        default:
            return nil
        }
    }
}
