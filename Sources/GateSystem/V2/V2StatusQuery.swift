import GateCore
import GateV2
import Logging
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// One signed status query over UDP (PROTOCOL-V2.md, "Status query"): a single datagram,
/// then the wait for the ESP32's signed `0x92` or `0x94` for that query's counter within a
/// budget. A status query never moves the relay, and this exchange can send nothing else:
/// its only frame is `V2Key.statusQuery`. It learns the epoch before an open (one LAN
/// round trip), and tells `gate doctor` which protocol the ESP32 answers.
///
/// The query's counter is a fresh random number rather than one of the open counters: the
/// ESP32 reads it only to echo it, and a fresh one makes a captured old reply useless to
/// whoever would replay it (the answer is matched on key id, gate and counter). Anything
/// that is not the genuine answer (other datagrams, forged or stale frames, a v1 byte) is
/// counted and ignored.
public struct V2StatusQuery: Sendable {
    public let target: SocketAddress
    public let key: V2Key
    public let gate: UInt8
    public let logger: Logger

    public init(target: SocketAddress, key: V2Key, gate: UInt8 = 0, logger: Logger) {
        self.target = target
        self.key = key
        self.gate = gate
        self.logger = logger
    }

    public struct Answer: Sendable, Equatable {
        public var status: V2DeviceStatus
        /// Datagrams that came back and were not the answer.
        public var ignored: Int
    }

    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// No genuine answer within the budget; `ignored` datagrams came that were not one
        /// (a v1 firmware, or another key, answers nothing at all).
        case silent(ignored: Int, budget: Duration)
        /// The query could not be sent, or the network said nobody listens.
        case unreachable(String)

        public var description: String {
            switch self {
            case .silent(let ignored, let budget):
                let others = ignored == 0 ? "" : " (\(ignored) other datagram\(ignored == 1 ? "" : "s") ignored)"
                return "no signed status reply within \(budget)\(others)"
            case .unreachable(let why):
                return why
            }
        }
    }

    /// Sends the query once and waits at most `budget` for its answer.
    public func run(budget: Duration) -> Result<Answer, Failure> {
        let counter: UInt64
        switch SystemRandom.nonZero64() {
        case .success(let drawn): counter = drawn
        case .failure(let error): return .failure(.unreachable("cannot draw the query's counter: \(error)"))
        }
        let query = key.statusQuery(counter: counter, gate: gate)
        let fd = socket(target.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.unreachable("cannot open a UDP socket: \(SystemError("socket"))")) }
        defer { close(fd) }
        // Connected: the kernel passes only the ESP32's datagrams and reports an ICMP
        // port unreachable as ECONNREFUSED.
        guard target.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            return .failure(.unreachable("cannot reach the ESP32 at \(target): \(SystemError("connect"))"))
        }
        let sent = query.bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == query.bytes.count else {
            return .failure(.unreachable("cannot send the status query to \(target): \(SystemError("send"))"))
        }
        logger.debug("status query sent", metadata: ["target": "\(target)", "key_id": "\(key.id)"])
        return receive(on: fd, query: query, budget: budget)
    }

    private func receive(on fd: Int32, query: V2Frame, budget: Duration) -> Result<Answer, Failure> {
        let deadline = MonotonicNanoseconds.now() + UInt64(max(0, budget.nanosecondsClamped))
        var ignored = 0
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            if case .failure(let error) = Poll.wait(&fds, until: deadline) {
                return .failure(.unreachable("cannot wait for the ESP32's answer: \(error)"))
            }
            guard fds[0].revents != 0 else {
                return .failure(.silent(ignored: ignored, budget: budget))
            }
            let count = retryingOnInterrupt { recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { continue }
                if errno == ECONNREFUSED {
                    return .failure(.unreachable("nothing listens at \(target) (ICMP port unreachable)"))
                }
                return .failure(.unreachable("cannot receive from \(target): \(SystemError("recv"))"))
            }
            if let reply = key.reply(to: query, datagram: Array(buffer[0..<count])),
                let status = V2DeviceStatus(kind: reply.kind, epoch: reply.epoch)
            {
                logger.debug("status reply", metadata: ["reply": "\(reply)"])
                return .success(Answer(status: status, ignored: ignored))
            }
            ignored += 1
            logger.debug("datagram ignored", metadata: ["bytes": "\(count)"])
        }
    }
}
