import GateCore
import GateNotifications
import GateSystem
import Logging
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// `gate doctor`: every check in `DoctorCheck` order, each run even when an
/// earlier one failed, unless it needs what that one would have provided (no
/// valid configuration: nothing configuration-bound can be checked).
public enum Doctor {
    /// - Parameter button: requests and releases the button's GPIO line; passed in
    ///   because libgpiod lives with the daemon, not here.
    public static func examine(
        configPath: String?,
        environment: [String: String] = ProcessEnvironment.current(),
        logger: Logger,
        button: (ButtonConfig) -> ButtonFacts
    ) -> DoctorReport {
        var findings: [DoctorFinding] = []
        let user = DoctorProbe.user()

        let (configFacts, loaded) = DoctorProbe.config(explicitPath: configPath, environment: environment)
        findings.append(DoctorVerdict.config(configFacts))

        findings += folders(environment: environment, user: user)
        findings.append(
            daemon(environment: environment, user: user, configPath: loaded.flatMap { ConfigLocator.canonical($0.1) })
        )

        guard let (config, file) = loaded else {
            let unchecked = DoctorCheck.allCases.filter { check in !findings.contains { $0.check == check } }
            return DoctorReport(findings: findings + unchecked.map { .skip($0, "not checked: no valid configuration") })
        }

        if let udp = config.udp {
            let facts = DoctorProbe.udp(udp)
            logger.debug("doctor: udp", metadata: ["host": "\(udp.host)", "facts": "\(facts)"])
            findings.append(DoctorVerdict.udp(facts, host: udp.host, file: file, mqttConfigured: config.mqtt != nil))
            findings.append(esp32(udp, facts, file: file, logger: logger))
        } else {
            findings.append(.skip(.udp, "no [udp] table: openings use MQTT only"))
            findings.append(.skip(.esp32, "no [udp] table: the ESP32's address is not known here"))
        }
        findings.append(v2(config, file: file, environment: environment, logger: logger))

        let (mqttFindings, homeAssistant) = mqtt(config, file: file, environment: environment, logger: logger)
        findings += mqttFindings

        findings.append(
            config.button.map { DoctorVerdict.button(button($0), button: $0, file: file, user: user) }
                ?? .skip(.gpio, "no [button] table: this host reads no push button")
        )
        findings.append(homeAssistant)
        if config.notify != nil {
            let facts = DesktopNotifications(environment: environment).serverFacts()
            logger.debug("doctor: notify", metadata: ["facts": "\(facts)"])
            findings.append(DoctorVerdict.notify(facts, file: file))
        } else {
            findings.append(.skip(.notify, "no [notify] table: the daemon shows no desktop notifications"))
        }
        return DoctorReport(findings: findings)
    }

    /// Whether something answers at the ESP32's on-link address (ICMP echo, neighbour
    /// table); bounded by `udp.timeout`. Off-link, loopback or unresolved: nothing to ask.
    private static func esp32(_ udp: UDPConfig, _ facts: UDPFacts, file: String, logger: Logger) -> DoctorFinding {
        switch facts {
        case .verdict(let address, .onLink(let interface)):
            let seen = ESP32Probe.look(at: address, interface: interface, budget: .seconds(fromConfig: udp.timeout))
            logger.debug("doctor: esp32", metadata: ["address": "\(address)", "facts": "\(seen)"])
            return DoctorVerdict.esp32(seen, host: udp.host, file: file)
        case .verdict(_, .loopback):
            return .skip(.esp32, "udp.host is on loopback (a simulator on this machine): this machine answers for it")
        case .verdict(_, .offLink), .unresolved, .lookupTimedOut, .noInterfaceTable:
            return .skip(.esp32, "not checked: udp.host is not an address on a directly connected network")
        }
    }

    /// The broker's checks, each needing the one before, and Home Assistant's, which needs
    /// the login: returned apart, since the gpio check is printed between them.
    private static func mqtt(
        _ config: GateConfig,
        file: String,
        environment: [String: String],
        logger: Logger
    ) -> ([DoctorFinding], DoctorFinding) {
        guard let mqtt = config.mqtt else {
            let why = "no [mqtt] table: no MQTT fallback"
            return (
                [.skip(.mqttPassword, why), .skip(.mqttTCP, why), .skip(.mqttConnect, why)],
                .skip(.homeassistant, "no [homeassistant] table")
            )
        }
        // Released (and so wiped) when this function returns.
        let password: Secret?
        let found: DoctorFinding
        if let username = mqtt.username {
            let (facts, secret) = DoctorProbe.password(environment: environment)
            password = secret
            found = DoctorVerdict.password(facts, username: username)
        } else {
            password = nil
            found = .skip(.mqttPassword, "no mqtt.username: the broker is asked for an anonymous login")
        }
        let tcp = DoctorVerdict.tcp(DoctorBroker.tcp(mqtt), mqtt: mqtt, file: file)
        let connect: DoctorFinding
        if tcp.failed {
            connect = .skip(.mqttConnect, "not checked: the broker cannot be reached over TCP")
        } else if found.failed {
            connect = .skip(.mqttConnect, "not checked: no usable password for mqtt.username")
        } else {
            let facts = DoctorBroker.connect(mqtt, password: password)
            logger.debug(
                "doctor: broker",
                metadata: ["broker": "\(DoctorVerdict.endpoint(mqtt))", "facts": "\(facts)"]
            )
            connect = DoctorVerdict.broker(facts, mqtt: mqtt, file: file)
        }
        let findings = [found, tcp, connect]
        guard let homeAssistant = config.homeAssistant else {
            return (findings, .skip(.homeassistant, "no [homeassistant] table"))
        }
        guard connect.status == .ok else {
            return (findings, .skip(.homeassistant, "not checked: the broker login did not succeed"))
        }
        return (findings, homeAssistantCheck(mqtt, homeAssistant, password: password, file: file))
    }

    /// Subscribes to the command topic (for the SUBACK only: nothing is published) as the
    /// daemon would: a broker that refuses it would never pass HA's presses on.
    private static func homeAssistantCheck(
        _ mqtt: MQTTConfig,
        _ ha: HomeAssistantConfig,
        password: Secret?,
        file: String
    ) -> DoctorFinding {
        let topics = HomeAssistantTopics(ha)
        let user = mqtt.username.map { "user \($0)" } ?? "anonymous clients"
        switch MQTTOneShot.run(
            mqtt,
            password: password,
            subscribe: topics.command,
            publish: [],
            timeout: .seconds(fromConfig: mqtt.timeout)
        ) {
        case .success(let outcome) where outcome.subscriptionGranted == true:
            return .ok(
                .homeassistant,
                "the broker accepts the subscription to the command topic \(topics.command); device \"\(ha.name)\" is announced under \(ha.discoveryPrefix)/"
            )
        case .success:
            return .unavailable(
                .homeassistant,
                "the broker refused the subscription to the command topic \(topics.command): Home Assistant's button would never reach the daemon",
                fix:
                    "let \(user) read \(topics.command) and \(topics.homeAssistantStatus), and write \(ha.discoveryPrefix)/# and gate/\(ha.nodeID)/#, in the broker's ACL (/usr/share/doc/gate/homeassistant.md, and its example examples/mosquitto-homeassistant.acl)"
            )
        case .failure(let failure):
            return .unavailable(
                .homeassistant,
                "cannot check the command topic \(topics.command): \(failure)",
                fix: "check the broker named in [mqtt] of \(file)"
            )
        }
    }

    /// Which daemon serves the runtime folder: asked on its control socket.
    private static func daemon(environment: [String: String], user: DoctorUser, configPath: String?) -> DoctorFinding {
        guard case .success(let paths) = RuntimePaths.resolve(environment: environment) else {
            return .skip(.daemon, "not checked: no usable runtime folder")
        }
        return DoctorVerdict.daemon(DoctorProbe.daemon(paths), user: user, configPath: configPath)
    }

    /// The runtime and the state folder. `RuntimePaths.resolve` reports only the first
    /// folder it cannot choose; each is asked for again with the other one given, so
    /// that both are checked and each failure carries its own words.
    private static func folders(environment: [String: String], user: DoctorUser) -> [DoctorFinding] {
        let runtime: DoctorFinding
        switch RuntimePaths.resolve(environment: environment.merging(["GATE_STATE_DIR": "/"]) { $1 }) {
        case .success(let paths):
            let (folder, lock, sharedUnwritable) = DoctorProbe.runtime(paths, environment: environment)
            runtime = DoctorVerdict.runtime(folder, lock: lock, sharedUnwritable: sharedUnwritable, user: user)
        case .failure(let error) where error.unusableShared != nil:
            // /run/gate exists but this account cannot use it: openings refuse to run (exit 78).
            let shared = error.unusableShared ?? RuntimePaths.sharedRuntimeDirectory
            var state = DoctorProbe.folderState(shared)
            if case .writable = state { state = .notWritable(why: "access: \(SystemError.text(for: EACCES))") }
            let folder = FolderFacts(path: shared, origin: .shared, state: state)
            runtime = DoctorVerdict.runtime(folder, lock: .absent, sharedUnwritable: nil, user: user)
        case .failure(let error):
            runtime = DoctorVerdict.unresolved(.runtime, error.message)
        }
        let state: DoctorFinding
        switch RuntimePaths.resolve(environment: environment.merging(["GATE_RUNTIME_DIR": "/"]) { $1 }) {
        case .success(let paths):
            state = DoctorVerdict.state(DoctorProbe.state(paths, environment: environment), user: user)
        case .failure(let error):
            state = DoctorVerdict.unresolved(.state, error.message)
        }
        return [runtime, state]
    }
}
