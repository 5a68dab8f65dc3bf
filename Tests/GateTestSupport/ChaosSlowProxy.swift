import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A slow broker without netem: a TCP relay on 127.0.0.1 in front of a broker that holds
/// every chunk it reads, in either direction, for `delay` before passing it on, in order.
/// Each connection gets a reader and a writer thread per direction; the writer keeps the
/// reader's order, so the byte stream is never changed, only late.
public final class ChaosSlowProxy: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public let port: UInt16
    public let delay: Duration

    private let target: UInt16
    private let listenFD: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let lock = NSLock()
    private var stopped = false
    private var descriptors: [Int32] = []
    private var threads: [DispatchSemaphore] = []
    private var chunks = 0
    private var connections = 0

    /// Listens on a free 127.0.0.1 port and relays to 127.0.0.1:`target`.
    public init(to target: UInt16, delay: Duration) throws {
        self.target = target
        self.delay = delay
        let listener = try LoopbackSocket.descriptor(.tcp, listen: 16)
        let fd = listener.fd
        port = listener.address.port
        listenFD = fd
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            close(fd)
            throw Failure("pipe: errno \(errno)")
        }
        wakeRead = pipeEnds[0]
        wakeWrite = pipeEnds[1]
        spawn("slow-proxy-accept") { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// Chunks relayed so far (both directions) and connections accepted.
    public var counts: (chunks: Int, connections: Int) { lock.withLock { (chunks, connections) } }

    /// Ends every thread (a chunk still held is dropped) and closes every socket.
    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        // Writers wait on their own conditions; they look at `stopped` at least every 50 ms.
        let waiting = lock.withLock { threads }
        for done in waiting { _ = done.wait(timeout: .now() + 5) }
        lock.withLock {
            for fd in descriptors { close(fd) }
            descriptors = []
        }
        close(listenFD)
        close(wakeRead)
        close(wakeWrite)
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        lock.withLock { threads.append(done) }
        let thread = Thread {
            body()
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    private func acceptLoop() {
        while !isStopped {
            var fds = [
                pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, -1)
            if ready < 0 { if errno == EINTR { continue } else { return } }
            if fds[1].revents != 0 { return }
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else { continue }
            let upstream = try? LoopbackSocket.connectedDescriptor(
                .tcp,
                to: LoopbackSocket.Address(host: "127.0.0.1", port: target)
            )
            lock.withLock {
                descriptors.append(client)
                if let upstream { descriptors.append(upstream) }
                connections += 1
            }
            guard let upstream else {
                shutdown(client, Int32(SHUT_RDWR))
                continue
            }
            relay(from: client, to: upstream, name: "client→broker")
            relay(from: upstream, to: client, name: "broker→client")
        }
    }

    /// One direction: a reader that stamps each chunk, a writer that sends it `delay` later.
    private func relay(from source: Int32, to sink: Int32, name: String) {
        final class Line: @unchecked Sendable {
            let condition = NSCondition()
            var chunks: [(due: ContinuousClock.Instant, bytes: [UInt8]?)] = []
        }
        let line = Line()
        spawn("slow-proxy-read \(name)") { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !isStopped {
                var fds = [
                    pollfd(fd: source, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&fds, 2, -1)
                if ready < 0 { if errno == EINTR { continue } else { break } }
                if fds[1].revents != 0 { break }
                let count = recv(source, &buffer, buffer.count, 0)
                if count < 0 && errno == EINTR { continue }
                let chunk: [UInt8]? = count > 0 ? Array(buffer[..<count]) : nil
                line.condition.lock()
                line.chunks.append((ContinuousClock.now + delay, chunk))
                line.condition.signal()
                line.condition.unlock()
                if chunk == nil { break }
            }
        }
        spawn("slow-proxy-write \(name)") { [self] in
            while true {
                line.condition.lock()
                while line.chunks.isEmpty && !isStopped {
                    _ = line.condition.wait(until: Date().addingTimeInterval(0.05))
                }
                let next = line.chunks.first
                line.condition.unlock()
                guard let next, !isStopped else { return }
                while ContinuousClock.now < next.due {
                    if isStopped { return }
                    let left = next.due - ContinuousClock.now
                    Thread.sleep(forTimeInterval: min(0.05, Double(left.chaosMilliseconds + 1) / 1000))
                }
                line.condition.lock()
                line.chunks.removeFirst()
                line.condition.unlock()
                guard let bytes = next.bytes else {
                    shutdown(sink, Int32(SHUT_WR))  // the end of the stream, late like the rest
                    return
                }
                lock.withLock { chunks += 1 }
                var offset = 0
                while offset < bytes.count {
                    let sent = bytes[offset...].withUnsafeBytes {
                        send(sink, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    if sent < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    offset += sent
                }
            }
        }
    }
}
