import ArgumentParser
import Glibc
import Logging
import Plumbing

extension SimulatorCommand {
    /// How long the first MQTT connection may take, CONNACK and SUBACK included.
    static let mqttStartupLimit: Duration = .seconds(10)

    func run() throws {
        // First, before anything can start a thread (see SignalWaiter): the UDP receive
        // thread, libmosquitto's network thread and the relay's task threads all inherit
        // the blocked signals from this one.
        // SIGUSR1 reboots a protocol 2 device; under protocol 1 it keeps its default action.
        let signals = SignalWaiter(protocolVersion == 2 ? [SIGINT, SIGTERM, SIGUSR1] : [SIGINT, SIGTERM])

        let level: Logger.Level = verbose ? .debug : .info
        LoggingSystem.bootstrap { _ in StderrLogHandler(logLevel: level, format: Self.logLine) }
        let logger = Logger(label: "esp32-sim")

        let triggerLog: TriggerLog?
        do {
            triggerLog = try triggerLogPath.map { path throws(SystemError) in try TriggerLog(path: path) }
        } catch {
            logger.error("cannot open trigger log: \(error)")
            throw ExitCode.failure
        }

        // validate() has already accepted the faults and the --udp text.
        let faults = try Faults(fault)
        let firmware = try makeFirmware(faults: faults, triggerLog: triggerLog, logger: logger)
        // Bound first, so that a port in use fails before any broker is bothered; the
        // receive thread starts only once MQTT is up, so that no UDP-triggered status
        // report is published before the device is connected.
        let udpTransport = try bindUDP(faults: faults, firmware: firmware, logger: logger)

        var mqttTransport: MQTTTransport?
        if let settings = mqttSettings(faults: faults) {
            let transport = try startMQTT(settings, firmware: firmware, logger: logger)
            mqttTransport = transport
            if let number = try awaitSubscription(transport, signals: signals, firmware: firmware, logger: logger) {
                logger.info("stopping (\(signalName(number))) before ready")
                transport.stop()
                return
            }
        } else if let mqttHost {
            logger.info("mqtt off (fault mqtt-off): not connecting to \(mqttHost)")
        }

        do {
            if case .v2(let device) = firmware { try device.start() }
            try udpTransport?.start()
        } catch {
            logger.error("cannot listen on udp \(udp): \(error)")
            mqttTransport?.abandon()
            throw ExitCode.failure
        }

        let logNote = triggerLog.map { ", trigger log \($0.path)" } ?? ""
        let running = (udpTransport == nil ? [] : [Transport.udp]) + (mqttTransport == nil ? [] : [.mqtt])
        logger.info("hold \(holdMilliseconds) ms, fault \(faults.description(of: running))\(logNote)")
        print("ready")
        // stdout is a pipe in tests and scripts, where print() is block-buffered.
        fflush(nil)

        var received = signals.wait()
        while received == SIGUSR1, case .v2(let device) = firmware {
            device.reboot(reason: "SIGUSR1")
            received = signals.wait()
        }
        logger.info("stopping (\(signalName(received)))")
        udpTransport?.stop()
        mqttTransport?.stop()
        if case .v2(let device) = firmware { device.stop() }
        if firmware.isHeld {
            logger.info("relay was held; its release is not reported")
        }
    }

    /// The device's firmware: v1's relay, or protocol 2's device with its keys.
    private func makeFirmware(faults: Faults, triggerLog: TriggerLog?, logger: Logger) throws -> Firmware {
        if protocolVersion == 2 {
            let device = try makeDeviceV2(faults: faults, triggerLog: triggerLog, logger: logger)
            logger.info("protocol 2: \(device.bootLine)")
            return .v2(device)
        }
        if let name = ProvisionedKey.variablesSet().first {
            logger.warning("$\(name) is set but --protocol is 1: keys are ignored")
        }
        return .v1(Relay(hold: .milliseconds(holdMilliseconds), faults: faults, triggerLog: triggerLog, logger: logger))
    }

    /// The UDP socket, bound but not yet receiving; nil under the fault udp-off.
    private func bindUDP(faults: Faults, firmware: Firmware, logger: Logger) throws -> UDPTransport? {
        if faults.isOff(.udp) {
            logger.info("udp off (fault udp-off): nothing listens on \(udp)")
            return nil
        }
        do {
            let transport = try UDPTransport(
                bindingTo: SocketAddress(endpoint: udp)!,
                firmware: firmware,
                logger: logger
            )
            logger.info("listening on udp \(transport.localAddress)")
            if case .v2(let device) = firmware {
                device.attach { bytes, peer, what in transport.send(bytes, to: peer, what: what) }
            }
            return transport
        } catch {
            logger.error("cannot listen on udp \(udp): \(error)")
            throw ExitCode.failure
        }
    }

    private func startMQTT(_ settings: MQTTSettings, firmware: Firmware, logger: Logger) throws -> MQTTTransport {
        if settings.password != nil && settings.username == nil {
            logger.warning(
                "$\(MQTTSettings.passwordVariable) is set but --mqtt-username is not; connecting without credentials"
            )
        }
        if let caFile = settings.caFile, access(caFile, R_OK) != 0 {
            logger.error("--mqtt-tls-ca: \(SystemError("cannot read \(caFile)"))")
            throw ExitCode.failure
        }
        let transport: MQTTTransport
        do {
            transport = try MQTTTransport(settings: settings, firmware: firmware, logger: logger)
        } catch {
            logger.error("cannot set up the MQTT client for \(settings.broker): \(error)")
            throw ExitCode.failure
        }
        // Registered before connecting, so that no relay change can go unpublished.
        switch firmware {
        case .v1(let relay): relay.addObserver(on: .mqtt) { report in transport.publish(report) }
        case .v2(let device): device.attach { publication in transport.publish(publication) }
        }
        let tls = settings.caFile == nil ? "" : " with TLS"
        let user = settings.username.map { " as user \($0)" } ?? ""
        logger.info("connecting to MQTT broker \(settings.broker)\(tls)\(user)")
        if settings.caFile != nil,
            let failure = tcpConnectFailure(host: settings.host, port: settings.port, timeout: Self.mqttStartupLimit)
        {
            logger.error("cannot connect to MQTT broker \(settings.broker): \(failure)")
            transport.abandon()
            throw ExitCode.failure
        }
        do {
            try transport.start()
        } catch {
            let detail = transport.lastLibraryError.map { " (library: \($0))" } ?? ""
            logger.error("cannot connect to MQTT broker \(settings.broker): \(error)\(detail)")
            transport.abandon()
            throw ExitCode.failure
        }
        return transport
    }

    /// Waits for the first SUBACK, in short slices so that SIGINT/SIGTERM still stop the
    /// device at once while the broker takes its time: nil once subscribed, else the signal
    /// that stopped the wait. Exits with status 1 on failure.
    private func awaitSubscription(
        _ transport: MQTTTransport,
        signals: SignalWaiter,
        firmware: Firmware,
        logger: Logger
    ) throws -> Int32? {
        let deadline = ContinuousClock.now + Self.mqttStartupLimit
        while true {
            let failure: String
            switch transport.startup {
            case .subscribed:
                return nil
            case .failed(let message):
                failure = message
            case .pending:
                guard ContinuousClock.now < deadline else {
                    failure = transport.startupTimeoutReason(after: Self.mqttStartupLimit)
                    break
                }
                if let number = signals.wait(timeout: .milliseconds(20)) {
                    guard number == SIGUSR1, case .v2(let device) = firmware else { return number }
                    device.reboot(reason: "SIGUSR1")
                }
                continue
            }
            logger.error("\(failure)")
            transport.abandon()
            throw ExitCode.failure
        }
    }

    /// `esp32-sim: <message>`: info lines carry no level (they are the narrative a user
    /// or a test reads); other levels are named.
    @Sendable static func logLine(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata) -> String {
        // No metadata: the simulator attaches none.
        "esp32-sim: " + (level == .info ? "" : "\(level): ") + message.description
    }
}
