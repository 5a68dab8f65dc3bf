import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A lossy, slow, reordering, duplicating UDP link in user space: what `tc qdisc add … netem
/// loss 30% delay 200ms 100ms duplicate 10%` would do, for a kernel without `sch_netem`
/// (on the machine these tests were written on, `tc … netem` fails with "Specified qdisc kind
/// is unknown" and no module can be loaded).
///
/// It runs on a thread of its own inside the middle namespace (`NetNS.enterOnThisThread`):
///
///     gate ns  ── veth ──  relay ns  ── veth ──  esp ns
///     gate  →  listen (the address gate is configured with)  →  per-gate socket  →  esp32-sim
///
/// Each gate socket (address and port) gets its own outbound socket towards the simulator,
/// like a NAT, so that the simulator's answers go back to the socket that sent the trigger,
/// and they leave from the listening address: the address and port gate is configured with,
/// the only source gate accepts.
///
/// Every datagram, each way, is dropped with probability `loss`; else it is sent on at once
/// with probability `reorder` (netem's `reorder`: it overtakes whatever is still delayed), or
/// after `delay ± jitter` (uniform, so datagrams closer than 2×jitter can overtake each other
/// too, as with netem's jitter); then, with probability `duplicate`, a copy follows up to
/// `duplicateLag` later. Payloads are never changed. Everything is recorded per gate socket
/// (`Session`), with the times of delivery, so a test can tell what gate saw.
public final class ChaosRelay: @unchecked Sendable {
    public struct Impairment: Sendable, CustomStringConvertible {
        public var loss = 0.30
        public var delay = Duration.milliseconds(200)
        public var jitter = Duration.milliseconds(100)
        public var reorder = 0.25
        public var duplicate = 0.10
        /// The largest extra delay of a duplicate. Keep it below the simulator's hold: a copy
        /// of a trigger then arrives while the relay is held and is ignored (docs/CONTRACT.md#the-relay-simulator), as the
        /// real ESP32 does; the invariant under test is that gate never *sends* twice.
        public var duplicateLag = Duration.milliseconds(10)

        public init() {}

        public var description: String {
            "loss \(Int(loss * 100)) %, delay \(delay.chaosMilliseconds) ms ± \(jitter.chaosMilliseconds) ms (uniform), "
                + "reorder \(Int(reorder * 100)) % (sent at once), duplicate \(Int(duplicate * 100)) % (copy ≤ \(duplicateLag.chaosMilliseconds) ms later)"
        }
    }

    /// One datagram handed on by the relay.
    public struct Delivery: Sendable {
        /// When it was sent on, relative to the session's first datagram from gate.
        public let at: Duration
        public let bytes: [UInt8]
        /// The order in which the relay received the original (0, 1, …, per direction).
        let sequence: Int
        let isCopy: Bool
    }

    /// Everything that passed for one gate socket, i.e. one `gate open`.
    public struct Session: Sendable {
        public let gate: String
        /// Every datagram gate sent, as received (before any impairment).
        public var fromGate: [[UInt8]] = []
        /// What reached the simulator, copies included.
        public var toESP: [Delivery] = []
        /// Every datagram the simulator answered, as received.
        public var fromESP: [[UInt8]] = []
        /// What reached gate, copies included, in the order sent (a veth keeps the order).
        public var toGate: [Delivery] = []
        public var dropped = 0
        public var duplicated = 0

        /// Datagrams from gate that carry the trigger byte.
        public var triggersFromGate: Int { fromGate.filter { $0.first == 0x01 }.count }
        public var triggersToESP: Int { toESP.filter { $0.bytes.first == 0x01 }.count }
        /// Deliveries to gate that overtook an answer the simulator had sent earlier.
        public var reorderedToGate: Int { Self.overtaking(toGate) }
        public var reorderedToESP: Int { Self.overtaking(toESP) }

        private static func overtaking(_ deliveries: [Delivery]) -> Int {
            var highest = -1
            var count = 0
            for delivery in deliveries where !delivery.isCopy {
                if delivery.sequence < highest { count += 1 }
                highest = max(highest, delivery.sequence)
            }
            return count
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public let impairment: Impairment
    public let seed: UInt64

    private struct Scheduled {
        let due: ContinuousClock.Instant
        public let order: Int
        public let session: Int
        let towardsGate: Bool
        public let bytes: [UInt8]
        let sequence: Int
        let isCopy: Bool
    }

    private struct SessionSocket {
        public let fd: Int32
        public let gate: sockaddr_in
        public let started: ContinuousClock.Instant
        var receivedFromGate = 0
        var receivedFromESP = 0
    }

    private let lock = NSLock()
    private var records: [Session] = []
    private var sockets: [SessionSocket] = []
    private var queue: [Scheduled] = []
    private var lastActivity = ContinuousClock.now
    private var scheduledCount = 0
    private var random: SplitMix64
    private var running = true
    /// Sessions before this index are over: a datagram from their gate socket's address and
    /// port starts a new session (the kernel reuses ephemeral ports across `gate open`s).
    private var firstOpenSession = 0

    /// Set by the relay's thread before `init` returns, closed by `stop()`.
    private var listenFD: Int32 = -1
    private let esp: sockaddr_in
    private let outboundAddress: String
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the relay in `namespace`: listening on `listen`, forwarding to `esp` from
    /// sockets bound to `outbound` (an address of the relay namespace on the ESP32's side).
    public init(
        namespace: String,
        listen: (host: String, port: UInt16),
        esp: (host: String, port: UInt16),
        outbound: String,
        impairment: Impairment = Impairment(),
        seed: UInt64
    ) throws {
        self.impairment = impairment
        self.seed = seed
        random = SplitMix64(seed: seed)
        self.esp = Self.address(esp.host, esp.port)
        outboundAddress = outbound
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw Failure("pipe: errno \(errno)") }
        wakeRead = pipeEnds[0]
        wakeWrite = pipeEnds[1]

        // Every socket is made on the relay's own thread, after it entered the namespace:
        // the listening one here, one per gate socket later.
        final class Start: @unchecked Sendable {
            var error: (any Error)?
            let done = DispatchSemaphore(value: 0)
        }
        let start = Start()
        let thread = Thread { [self, start] in
            do {
                try NetNS.enterOnThisThread(namespace)
                listenFD = try Self.boundSocket(listen.host, listen.port)
            } catch {
                start.error = error
            }
            start.done.signal()
            if start.error == nil { run() }
            finished.signal()
        }
        thread.name = "chaos-relay"
        thread.start()
        start.done.wait()
        if let error = start.error {
            _ = finished.wait(timeout: .now() + 5)
            lock.withLock { running = false }
            close(wakeRead)
            close(wakeWrite)
            throw error
        }
    }

    deinit {
        stop()
    }

    /// Stops the thread and closes every socket. Safe to call twice.
    public func stop() {
        let wasRunning = lock.withLock { () -> Bool in
            defer { running = false }
            return running
        }
        guard wasRunning else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        _ = finished.wait(timeout: .now() + 5)
        lock.withLock {
            for socket in sockets { close(socket.fd) }
            sockets = []
        }
        close(listenFD)
        close(wakeRead)
        close(wakeWrite)
    }

    /// Marks every session so far as over; call between openings, once the relay is quiet.
    public func beginOpening() {
        lock.withLock { firstOpenSession = sockets.count }
    }

    /// A copy of every session so far, oldest first.
    public func sessions() -> [Session] {
        lock.withLock { records }
    }

    /// Waits until nothing is scheduled and nothing arrived for `quiet`; false at `timeout`.
    @discardableResult
    public func waitUntilQuiet(_ quiet: Duration = .milliseconds(250), timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let settled = lock.withLock { queue.isEmpty && ContinuousClock.now - lastActivity >= quiet }
            if settled { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }

    // MARK: - The relay's thread

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while lock.withLock({ running }) {
            let (fds, timeout) = lock.withLock { () -> ([Int32], Int32) in
                let next = queue.min { ($0.due, $0.order) < ($1.due, $1.order) }
                let timeout: Int32
                if let next {
                    let left = next.due - ContinuousClock.now
                    timeout = left <= .zero ? 0 : Int32(clamping: left.chaosMilliseconds + 1)
                } else {
                    timeout = -1
                }
                return ([wakeRead, listenFD] + sockets.map(\.fd), timeout)
            }
            var polled = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&polled, nfds_t(polled.count), timeout)
            if ready < 0 && errno != EINTR { return }
            if polled[0].revents != 0 { return }
            if ready > 0 {
                if polled[1].revents != 0 { receiveFromGate(&buffer) }
                for (index, entry) in polled.enumerated().dropFirst(2) where entry.revents != 0 {
                    receiveFromESP(session: index - 2, &buffer)
                }
            }
            sendDue()
        }
    }

    private func receiveFromGate(_ buffer: inout [UInt8]) {
        while true {
            var source = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(listenFD, &buffer, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
                }
            }
            guard count >= 0 else { return }  // EAGAIN: drained (ICMP errors are not reported on an unbound-peer socket)
            let bytes = Array(buffer[..<count])
            let now = ContinuousClock.now
            let index: Int? = lock.withLock {
                sockets.indices.dropFirst(firstOpenSession).first {
                    sockets[$0].gate.sin_addr.s_addr == source.sin_addr.s_addr
                        && sockets[$0].gate.sin_port == source.sin_port
                }
            }
            let session: Int
            if let index {
                session = index
            } else {
                guard let fd = try? Self.boundSocket(outboundAddress, 0) else { continue }
                var target = esp
                _ = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                session = lock.withLock {
                    sockets.append(SessionSocket(fd: fd, gate: source, started: now))
                    records.append(Session(gate: Self.describe(source)))
                    return sockets.count - 1
                }
            }
            lock.withLock {
                lastActivity = now
                records[session].fromGate.append(bytes)
                let sequence = sockets[session].receivedFromGate
                sockets[session].receivedFromGate += 1
                impair(bytes, session: session, towardsGate: false, sequence: sequence, now: now)
            }
        }
    }

    private func receiveFromESP(session: Int, _ buffer: inout [UInt8]) {
        let fd = lock.withLock { sockets[session].fd }
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count < 0 {
                if errno == ECONNREFUSED { continue }  // an ICMP error for an earlier datagram
                return
            }
            let bytes = Array(buffer[..<count])
            let now = ContinuousClock.now
            lock.withLock {
                lastActivity = now
                records[session].fromESP.append(bytes)
                let sequence = sockets[session].receivedFromESP
                sockets[session].receivedFromESP += 1
                impair(bytes, session: session, towardsGate: true, sequence: sequence, now: now)
            }
        }
    }

    /// Decides the datagram's fate (called with the lock held).
    private func impair(_ bytes: [UInt8], session: Int, towardsGate: Bool, sequence: Int, now: ContinuousClock.Instant)
    {
        if random.chance(impairment.loss) {
            records[session].dropped += 1
            return
        }
        let jitter = impairment.jitter.chaosMilliseconds
        let delayed = Duration.milliseconds(
            impairment.delay.chaosMilliseconds + Int64.random(in: -jitter...jitter, using: &random)
        )
        let delay = random.chance(impairment.reorder) ? .zero : delayed
        schedule(
            Scheduled(
                due: now + delay,
                order: 0,
                session: session,
                towardsGate: towardsGate,
                bytes: bytes,
                sequence: sequence,
                isCopy: false
            )
        )
        if random.chance(impairment.duplicate) {
            records[session].duplicated += 1
            let lag = Duration.milliseconds(
                Int64.random(in: 1...max(1, impairment.duplicateLag.chaosMilliseconds), using: &random)
            )
            schedule(
                Scheduled(
                    due: now + delay + lag,
                    order: 0,
                    session: session,
                    towardsGate: towardsGate,
                    bytes: bytes,
                    sequence: sequence,
                    isCopy: true
                )
            )
        }
    }

    private func schedule(_ item: Scheduled) {
        scheduledCount += 1
        queue.append(
            Scheduled(
                due: item.due,
                order: scheduledCount,
                session: item.session,
                towardsGate: item.towardsGate,
                bytes: item.bytes,
                sequence: item.sequence,
                isCopy: item.isCopy
            )
        )
    }

    private func sendDue() {
        while true {
            let now = ContinuousClock.now
            let due: (item: Scheduled, fd: Int32, gate: sockaddr_in, started: ContinuousClock.Instant)? = lock.withLock
            {
                guard
                    let index = queue.indices.filter({ queue[$0].due <= now })
                        .min(by: { (queue[$0].due, queue[$0].order) < (queue[$1].due, queue[$1].order) })
                else { return nil }
                let item = queue.remove(at: index)
                let socket = sockets[item.session]
                return (item, socket.fd, socket.gate, socket.started)
            }
            guard let due else { return }
            var bytes = due.item.bytes
            if due.item.towardsGate {
                var gate = due.gate
                _ = withUnsafePointer(to: &gate) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(
                            listenFD,
                            &bytes,
                            bytes.count,
                            Int32(MSG_DONTWAIT),
                            $0,
                            socklen_t(MemoryLayout<sockaddr_in>.size)
                        )
                    }
                }
            } else {
                _ = send(due.fd, &bytes, bytes.count, Int32(MSG_DONTWAIT))
            }
            let sent = ContinuousClock.now
            let delivery = Delivery(
                at: sent - due.started,
                bytes: due.item.bytes,
                sequence: due.item.sequence,
                isCopy: due.item.isCopy
            )
            lock.withLock {
                lastActivity = sent
                if due.item.towardsGate {
                    records[due.item.session].toGate.append(delivery)
                } else {
                    records[due.item.session].toESP.append(delivery)
                }
            }
        }
    }

    // MARK: - Sockets

    public static func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        return address
    }

    static func boundSocket(_ host: String, _ port: UInt16) throws -> Int32 {
        try LoopbackSocket.descriptor(.udp, host: host, port: port).fd
    }

    static func describe(_ address: sockaddr_in) -> String {
        var raw = address.sin_addr
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
        let bytes = text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return "\(String(decoding: bytes, as: UTF8.self)):\(UInt16(bigEndian: address.sin_port))"
    }
}

extension ChaosRelay.Session {
    /// What gate must have concluded from what reached it (docs/CONTRACT.md#protocol, #one-opening), or nil when a
    /// deciding datagram came so close to gate's budget that either side of it is possible.
    ///
    /// Gate started its budget a little before the relay saw the trigger, so a datagram
    /// delivered within `budget - margin` of that is surely inside the budget and one after
    /// `budget` surely outside.
    public func expectedExit(budget: Duration, margin: Duration = .milliseconds(500)) -> Int32? {
        var activated = false
        for delivery in toGate {
            // Just after the budget a byte may still be read: gate drains what has
            // arrived before it concludes "no answer" (docs/CONTRACT.md#evidence-and-time: arrival time counts).
            if delivery.at > budget + margin { break }
            let certain = delivery.at <= budget - margin
            for byte in delivery.bytes {
                switch (activated, byte) {
                case (false, 0x01):
                    guard certain else { return nil }
                    activated = true
                case (true, 0x01):
                    continue  // a repeated 1 is harmless
                case (true, 0x00):
                    return certain ? 0 : nil
                default:
                    // A 0 before any 1 (its 1 was lost or overtaken), or a byte outside the
                    // protocol: an invalid response, no fallback.
                    return certain ? 76 : nil
                }
            }
        }
        // Nothing at all, or a 1 and no 0: the trigger left and the cycle was not
        // confirmed (124; 69 is only for a trigger that cannot have arrived).
        return 124
    }
}

/// A small seeded generator, so that a chaos run can be repeated with its printed seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }
}

extension Duration {
    /// Whole milliseconds (truncated).
    public var chaosMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
