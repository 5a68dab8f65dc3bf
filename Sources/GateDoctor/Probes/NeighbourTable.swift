import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The kernel's neighbour table, read over rtnetlink (`ip neigh show` does the same):
/// one dump of the address family, searched for one address.
enum NeighbourTable {
    /// How long the kernel may take to answer the dump before the table counts as unreadable.
    static let budget: Duration = .seconds(1)

    /// The entry for `address`, preferring the one on `interface`; nil when there is none.
    static func entry(for address: IPAddress, interface: String) -> Result<NeighbourEntry?, NeighbourTableError> {
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // NETLINK_ROUTE
        guard fd >= 0 else { return .failure(NeighbourTableError(SystemError("socket(AF_NETLINK)").description)) }
        defer { close(fd) }
        let family = UInt8(address.family == .v4 ? AF_INET : AF_INET6)
        // Sent to the kernel: an unbound netlink socket's default destination.
        if let error = Descriptor.writeAll(fd, NeighbourDump.request(family: family, sequence: 1)) {
            return .failure(NeighbourTableError(error.description))
        }
        let deadline = MonotonicClock.now() + budget
        var entries: [NeighbourEntry] = []
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        while true {
            guard Poll.wait(for: fd, events: Int16(POLLIN), until: deadline.nanoseconds) else {
                return .failure(NeighbourTableError("the kernel did not answer the RTM_GETNEIGH dump within 1 s"))
            }
            let count = retryingOnInterrupt { recv(fd, &buffer, buffer.count, 0) }
            guard count > 0 else { return .failure(NeighbourTableError(SystemError("recv").description)) }
            let batch = NeighbourDump.read(Array(buffer[0..<count]))
            if let code = batch.error {
                return .failure(NeighbourTableError(SystemError("RTM_GETNEIGH", code: code).description))
            }
            entries += batch.entries.filter { $0.address == address }
            if batch.done { break }
        }
        let index = Int32(bitPattern: if_nametoindex(interface))
        return .success(entries.first { $0.interfaceIndex == index } ?? entries.first)
    }
}
