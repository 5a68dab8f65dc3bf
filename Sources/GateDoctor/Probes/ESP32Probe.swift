import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `gate doctor`'s look at the ESP32 itself: ICMP echo requests through an
/// unprivileged ping socket (icmp(7), allowed to the groups in
/// net.ipv4.ping_group_range), then the kernel's neighbour table for its address.
/// Nothing is sent to its UDP port: an echo cannot trigger the relay.
public enum ESP32Probe {
    /// Time between echo requests: a Wi-Fi station in power save can miss one.
    static let echoInterval: Duration = .milliseconds(500)
    static let rangeFile = "/proc/sys/net/ipv4/ping_group_range"

    /// Echoes for at most `budget`, then reads the neighbour table (which the echo's own
    /// ARP or neighbour solicitation has just refreshed).
    public static func look(at address: IPAddress, interface: String, budget: Duration) -> ESP32Facts {
        let echo = self.echo(address, interface: interface, budget: budget)
        let neighbour = NeighbourTable.entry(for: address, interface: interface)
        return ESP32Facts(address: address, interface: interface, echo: echo, neighbour: neighbour)
    }

    static func echo(_ address: IPAddress, interface: String, budget: Duration) -> ESP32Facts.Echo {
        let v4 = address.family == .v4
        let fd = socket(
            v4 ? AF_INET : AF_INET6,
            Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
            Int32(v4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)
        )
        guard fd >= 0 else {
            let code = errno
            if code == EACCES { return .notPermitted(range: pingGroupRange(), gid: getegid()) }
            return .failed(SystemError("socket", code: code).description)
        }
        defer { close(fd) }
        // Port 0: a ping socket has no ports. A link-local IPv6 address needs its interface.
        let linkLocal = address.family == .v6 && address.bytes[0] == 0xFE && address.bytes[1] & 0xC0 == 0x80
        let connected = SocketAddress(ip: address, port: 0).withSockaddr(
            scopeID: linkLocal ? if_nametoindex(interface) : 0
        ) { connect(fd, $0, $1) }
        guard connected == 0 else { return failure(SystemError("connect")) }

        let started = MonotonicClock.now()
        let deadline = started + budget
        var sentAt: [UInt16: MonotonicInstant] = [:]
        var nextSend = started
        var sequence: UInt16 = 1
        while MonotonicClock.now() < deadline {
            if MonotonicClock.now() >= nextSend {
                let request = echoRequest(v4: v4, sequence: sequence)
                if send(fd, request, request.count, 0) < 0 { return failure(SystemError("send")) }
                sentAt[sequence] = MonotonicClock.now()
                sequence &+= 1
                nextSend = nextSend + echoInterval
            }
            _ = Poll.wait(for: fd, events: Int16(POLLIN), until: min(nextSend, deadline).nanoseconds)
            if let answer = drain(fd, v4: v4, sentAt: sentAt) { return answer }
        }
        // What arrived by the deadline counts, even if this thread was slow to look.
        return drain(fd, v4: v4, sentAt: sentAt) ?? .noReply(waited: budget)
    }

    /// Reads what is queued: a reply to one of ours, or the error the kernel reported
    /// for the address (EHOSTUNREACH once neighbour resolution failed); nil for nothing yet.
    private static func drain(_ fd: Int32, v4: Bool, sentAt: [UInt16: MonotonicInstant]) -> ESP32Facts.Echo? {
        var buffer = [UInt8](repeating: 0, count: 1500)
        while true {
            let count = retryingOnInterrupt { recv(fd, &buffer, buffer.count, 0) }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
                return failure(SystemError("recv"))
            }
            // The kernel hands over the ICMP message without the IP header.
            guard count >= 8, buffer[0] == (v4 ? 0 : 129) else { continue }
            let sequence = UInt16(buffer[6]) << 8 | UInt16(buffer[7])
            if let sent = sentAt[sequence] { return .replied(MonotonicClock.now().duration(since: sent)) }
        }
    }

    /// An echo request (type 8, or 128 for ICMPv6); the kernel sets the identifier and
    /// the checksum of a ping socket's messages.
    static func echoRequest(v4: Bool, sequence: UInt16) -> [UInt8] {
        [v4 ? 8 : 128, 0, 0, 0, 0, 0, UInt8(sequence >> 8), UInt8(sequence & 0xFF)] + Array("gate doctor".utf8)
    }

    /// Unreachable (the network said no) or failed (this machine could not try).
    private static func failure(_ error: SystemError) -> ESP32Facts.Echo {
        switch error.code {
        case EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ECONNREFUSED: .unreachable(error.description)
        default: .failed(error.description)
        }
    }

    /// `1 0` (closed) or `0 2147483647` (every group), as the file says it.
    static func pingGroupRange() -> String? {
        guard case .success(let text) = FileText.read(rangeFile, limit: 256) else { return nil }
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).joined(separator: " ")
    }
}
