import GPIO
import GateCore
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The kernel's `struct gpioevent_data`, byte for byte (little-endian like the
/// Pi and this machine): u64 timestamp in ns, u32 id (1 rising, 2 falling), 4 bytes padding.
private func record(_ timestampNs: UInt64, id: UInt32) -> [UInt8] {
    withUnsafeBytes(of: timestampNs.littleEndian) { Array($0) }
        + withUnsafeBytes(of: id.littleEndian) { Array($0) }
        + [0, 0, 0, 0]
}

/// A pipe whose read end an `EdgeReader` polls while the test writes records.
private final class EventPipe {
    let readEnd: Int32
    private var writeEnd: Int32

    init() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// One write per call: up to PIPE_BUF bytes arrive whole, as the kernel's records do.
    func write(_ bytes: [UInt8]) throws {
        let written = bytes.withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress, $0.count) }
        try #require(written == bytes.count)
    }

    func closeWriter() {
        if writeEnd >= 0 { close(writeEnd) }
        writeEnd = -1
    }

    deinit {
        closeWriter()
        close(readEnd)
    }
}

private func collect(_ reader: EdgeReader) async -> [Edge] {
    var edges: [Edge] = []
    for await edge in reader.edges { edges.append(edge) }
    return edges
}

@Suite("Edge reader over libgpiod's gpiod_line_event_read_fd", .timeLimit(.minutes(1)))
struct EdgeReaderTests {
    @Test("records come out in order, with their timestamps and directions")
    func orderAndTimestamps() async throws {
        let pipe = try EventPipe()
        try pipe.write(record(1_000_000_123, id: 2) + record(1_002_500_000, id: 1) + record(7_000_000_001, id: 2))
        pipe.closeWriter()
        let reader = try EdgeReader(fd: pipe.readEnd)
        let edges = await collect(reader)
        #expect(
            edges == [
                Edge(.falling, at: 1_000_000_123),
                Edge(.rising, at: 1_002_500_000),
                Edge(.falling, at: 7_000_000_001),
            ]
        )
        #expect(reader.ending == .endOfInput)
    }

    @Test("a partial record ends the stream with a clear error after the whole ones")
    func partialRecord() async throws {
        let pipe = try EventPipe()
        try pipe.write(record(5_000, id: 1) + Array(record(6_000, id: 2).prefix(8)))
        pipe.closeWriter()
        let reader = try EdgeReader(fd: pipe.readEnd)
        #expect(await collect(reader) == [Edge(.rising, at: 5_000)])
        guard case .failed(let error) = reader.ending else {
            Issue.record("expected a failure, got \(String(describing: reader.ending))")
            return
        }
        #expect(error.call == "gpiod_line_event_read_fd")
        #expect(error.code == EIO)
        #expect(
            error.description == "cannot read a whole 16-byte button event record from fd \(pipe.readEnd): "
                + "gpiod_line_event_read_fd: Input/output error"
        )
    }

    @Test("stop() ends a stream that waits for edges on an open pipe")
    func shutdown() async throws {
        let pipe = try EventPipe()
        let reader = try EdgeReader(fd: pipe.readEnd)
        let consumer = Task { await collect(reader) }
        try pipe.write(record(42, id: 2))
        try await Task.sleep(for: .milliseconds(50))
        #expect(reader.ending == nil)
        let clock = ContinuousClock()
        let started = clock.now
        reader.stop()
        let edges = await consumer.value
        // The pipe's write end stays open, so without the wake-up the stream would never
        // end; the bound only keeps a broken stop() from passing on a very slow machine
        // (ThreadSanitizer's build took 2.2 s here), it is not a latency figure.
        #expect(clock.now - started < .seconds(10))
        #expect(edges == [Edge(.falling, at: 42)])
        #expect(reader.ending == .stopped)
    }

    @Test("a bounce storm piped through the reader and the debouncer is one press")
    func stormIsOnePress() async throws {
        let pipe = try EventPipe()
        let base: UInt64 = 3_000_000_000
        // 20 edges within 30 ms (1.5 ms apart), falling first: press, bounce, released.
        var bytes: [UInt8] = []
        for index in 0..<20 {
            bytes += record(base + UInt64(index) * 1_500_000, id: index % 2 == 0 ? 2 : 1)
        }
        try pipe.write(bytes)
        pipe.closeWriter()
        let reader = try EdgeReader(fd: pipe.readEnd)
        var debouncer = ButtonDebouncer(.init(activeLow: true, debounceMs: 50, startNs: 1_000_000_000))
        var timer: UInt64?
        var presses: [UInt64] = []
        func apply(_ event: ButtonDebouncer.Event) {
            for action in debouncer.handle(event) {
                switch action {
                case .press(let at): presses.append(at)
                case .armTimer(let at): timer = at
                }
            }
        }
        for await edge in reader.edges {
            // Deadlines passed by this edge's time fire first, as a daemon's timer would have.
            while let due = timer, due <= edge.timestampNs {
                timer = nil
                apply(.timerFired(at: due))
            }
            switch edge.kind {
            case .rising: apply(.rising(at: edge.timestampNs))
            case .falling: apply(.falling(at: edge.timestampNs))
            }
        }
        while let due = timer {
            timer = nil
            apply(.timerFired(at: due))
        }
        #expect(reader.ending == .endOfInput)
        #expect(presses == [base])
        #expect(!debouncer.isPressed)
    }

    @Test("opening a GPIO chip that does not exist fails with a sentence, not a crash")
    func missingChip() throws {
        // This machine has no /dev/gpiochip*; on one that has, use a name that cannot exist.
        let name = access("/dev/gpiochip0", F_OK) == 0 ? "gpiochip999" : "gpiochip0"
        let error = #expect(throws: GPIOError.self) {
            _ = try ButtonLine.open(chip: name, line: 17, activeLow: true)
        }
        #expect(
            error?.description == "cannot open GPIO chip \(name): gpiod_chip_open_lookup: No such file or directory"
        )
    }
}
