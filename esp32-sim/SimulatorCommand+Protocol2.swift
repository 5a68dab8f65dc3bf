import ArgumentParser
import CGateProtocol
import Logging

extension SimulatorCommand {
    /// The checks of `validate()` that concern `--protocol` and what only protocol 2 has.
    func validateProtocol() throws(ValidationError) {
        guard protocolVersion == 1 || protocolVersion == 2 else {
            throw ValidationError("--protocol \(protocolVersion): must be 1 or 2")
        }
        if protocolVersion == 1 {
            let given: [(String, Bool)] = [
                ("--key-file", !keyFiles.isEmpty), ("--accept-v1", acceptV1),
                ("--epoch-period-ms", epochPeriodMilliseconds != nil), ("--loss-fraction", lossFraction != nil),
            ]
            if let option = given.first(where: \.1)?.0 {
                throw ValidationError("\(option) needs --protocol 2")
            }
            if let setting = fault.first(where: \.mode.needsProtocol2) {
                throw ValidationError("--fault \(setting.description) needs --protocol 2")
            }
            return
        }
        var seen = Set<UInt8>()
        for setting in keyFiles where !seen.insert(setting.id).inserted {
            throw ValidationError("--key-file \(setting.id)=…: key \(setting.id) is given twice")
        }
        if keyFiles.count > Int(GATE_MAX_KEYS) {
            throw ValidationError("--key-file: at most \(GATE_MAX_KEYS) keys, one per client")
        }
        if let period = epochPeriodMilliseconds, !(100...86_400_000).contains(period) {
            throw ValidationError("--epoch-period-ms \(period): must be 100…86400000")
        }
        if let lossFraction {
            guard lossFraction > 0 && lossFraction <= 1 else {
                throw ValidationError("--loss-fraction \(lossFraction): must be more than 0 and at most 1")
            }
            guard fault.contains(where: { $0.mode == .lostReplies }) else {
                throw ValidationError(
                    "--loss-fraction needs --fault lost-replies (or udp:lost-replies, mqtt:lost-replies)"
                )
            }
        }
        try validateV2Topics()
    }

    /// The device must never hear what it publishes itself: `<trigger>/v2` and the plain
    /// trigger topic stay apart from the status topic and everything under `<status>/v2`.
    private func validateV2Topics() throws(ValidationError) {
        let trigger = mqttTriggerTopic ?? MQTTSettings.defaultTriggerTopic
        let status = mqttStatusTopic ?? MQTTSettings.defaultStatusTopic
        for heard in [trigger, trigger + "/v2"] where heard == status || heard.hasPrefix(status + "/v2") {
            throw ValidationError(
                "--mqtt-trigger-topic \(trigger) and --mqtt-status-topic \(status): under --protocol 2 the device "
                    + "would hear its own publications on \(heard)"
            )
        }
    }

    /// The keys (environment first, then files, as the firmware reads NVS before
    /// menuconfig) and the device; exits 1 with a sentence when a key is unusable.
    func makeDeviceV2(faults: Faults, triggerLog: TriggerLog?, logger: Logger) throws -> DeviceV2 {
        var keys: [ProvisionedKey] = []
        do {
            keys = try ProvisionedKey.fromEnvironment()
            for setting in keyFiles {
                let key = try ProvisionedKey.fromFile(setting)
                if let earlier = keys.first(where: { $0.id == key.id }) {
                    throw ProvisioningError("key \(key.id) is given twice: \(earlier.origin) and \(key.origin)")
                }
                keys.append(key)
            }
            if keys.count > Int(GATE_MAX_KEYS) {
                throw ProvisioningError("\(keys.count) keys given; the device holds at most \(GATE_MAX_KEYS)")
            }
        } catch {
            // As the firmware: never fall back to v1, which would open to anyone.
            logger.error("cannot provision the keys: \(error); the device does not start")
            throw ExitCode.failure
        }
        for key in keys { logger.info("key \(key.id) from \(key.origin)") }
        let configuration = DeviceV2.Configuration(
            keys: keys,
            acceptsV1: acceptV1,
            hold: .milliseconds(holdMilliseconds),
            epochPeriodMilliseconds: epochPeriodMilliseconds.map(UInt32.init) ?? GATE_EPOCH_PERIOD_MS,
            lossFraction: lossFraction ?? 1
        )
        do {
            return try DeviceV2(configuration, faults: faults, triggerLog: triggerLog, logger: logger)
        } catch {
            logger.error("cannot start the device: pipe: error \(error.code)")
            throw ExitCode.failure
        }
    }
}
