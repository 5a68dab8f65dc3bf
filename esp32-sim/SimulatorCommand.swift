import ArgumentParser
import Glibc
import Logging

@main
struct SimulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "esp32-sim",
        abstract: "Simulate the gate's ESP32 relay controller, for tests and demos.",
        discussion: """
            Listens where the ESP32 would and answers as its firmware does. A datagram whose \
            first byte is 0x01 is a trigger: the relay closes, 0x01 goes back to the sender's \
            address and port, the relay is held for --hold-ms, 0x00 follows, and the relay \
            is ready again. A trigger that arrives while the relay is held is ignored: no \
            answer, one log line. Datagrams that are not triggers are ignored and logged.

            FAULT MODES
            --fault makes the device misbehave so that the gate's error handling can be \
            tried. A fault changes only what the device reports (and, for slow-release, \
            when): the relay itself always cycles, and every activation is written to the \
            trigger log, so a test can tell "triggered but answered wrongly" from "never \
            triggered". Each mode is described under --fault below.

            TRIGGER LOG
            --trigger-log FILE appends one JSON line per relay activation (ignored triggers \
            are not written). The file is created if missing (mode 0644) and never truncated; \
            each line is a single append, so a reader never sees half a line:
              {"via":"udp","at":"2026-11-21T10:00:00.123Z","from":"127.0.0.1:5555"}
            "at" is the time of activation in UTC with milliseconds; "from" is the sender's \
            address and port, written as --udp accepts it.

            OUTPUT
            Log lines go to stderr as "esp32-sim: <message>"; the first one names the address \
            actually bound ("listening on udp 127.0.0.1:54321"), which tells a test the port \
            chosen for port 0. Once listening, the line "ready" is printed on stdout; \
            nothing else is printed there.

            EXIT STATUS
            0 after SIGINT or SIGTERM, 64 for a usage error, 1 when the address cannot be \
            bound or the trigger log cannot be opened.

            EXAMPLES
              esp32-sim --udp 0.0.0.0:8080
              esp32-sim --udp [::1]:0 --fault no-release --trigger-log relay.jsonl
            """
    )

    @Option(
        name: .customLong("udp"),
        help: ArgumentHelp(
            "Address and port to listen on for UDP triggers.",
            discussion: "127.0.0.1:PORT, [::1]:PORT, 0.0.0.0:PORT, [::]:PORT, localhost:PORT or any "
                + "other IP literal. Port 0 picks a free port (see the \"listening on\" log line).",
            valueName: "host:port"
        )
    )
    var udp = "127.0.0.1:8080"

    @Option(
        name: .customLong("hold-ms"),
        help: ArgumentHelp("How long the relay stays closed, in milliseconds (0…60000).", valueName: "ms")
    )
    var holdMilliseconds = 400

    @Option(help: ArgumentHelp("How the device misbehaves.", valueName: "mode"))
    var fault: FaultMode = .none

    @Option(
        name: .customLong("trigger-log"),
        help: ArgumentHelp("Append one JSON line per relay activation to this file.", valueName: "file")
    )
    var triggerLogPath: String?

    @Flag(name: .shortAndLong, help: "Log debug detail: every datagram received, silent faults.")
    var verbose = false

    static let holdRange = 0...60_000

    func validate() throws {
        guard SocketAddress(endpoint: udp) != nil else {
            throw ValidationError(
                "--udp \(udp): expected HOST:PORT with an IPv4 literal, [IPv6 literal] or localhost, "
                    + "and a port 0…65535, e.g. 127.0.0.1:8080 or [::1]:0")
        }
        guard Self.holdRange.contains(holdMilliseconds) else {
            throw ValidationError("--hold-ms \(holdMilliseconds): must be 0…60000")
        }
    }

    func run() throws {
        // First, before anything can start a thread (see SignalWaiter).
        let signals = SignalWaiter([SIGINT, SIGTERM])

        let level: Logger.Level = verbose ? .debug : .info
        LoggingSystem.bootstrap { _ in StderrLogHandler(level: level) }
        let logger = Logger(label: "esp32-sim")

        let triggerLog: TriggerLog?
        do {
            triggerLog = try triggerLogPath.map { path throws(SystemError) in try TriggerLog(path: path) }
        } catch {
            logger.error("cannot open trigger log: \(error)")
            throw ExitCode.failure
        }

        let relay = Relay(
            hold: .milliseconds(holdMilliseconds), fault: fault, triggerLog: triggerLog, logger: logger)
        let transport: UDPTransport
        do {
            // validate() has already accepted the text.
            transport = try UDPTransport(bindingTo: SocketAddress(endpoint: udp)!, relay: relay, logger: logger)
            try transport.start()
        } catch {
            logger.error("cannot listen on udp \(udp): \(error)")
            throw ExitCode.failure
        }

        logger.info("listening on udp \(transport.localAddress)")
        let logNote = triggerLog.map { ", trigger log \($0.path)" } ?? ""
        logger.info("hold \(holdMilliseconds) ms, fault \(fault.rawValue)\(logNote)")
        print("ready")
        // stdout is a pipe in tests and scripts, where print() is block-buffered.
        fflush(nil)

        let received = signals.wait()
        logger.info("stopping (\(signalName(received)))")
        transport.stop()
        if relay.isHeld {
            logger.info("relay was held; its release is not reported")
        }
    }
}
