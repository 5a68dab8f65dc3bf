import GateCore

/// Turns what `gate doctor` gathered into findings: a sentence each, and for a
/// failure the concrete command or key to change.
public enum DoctorVerdict {
    /// Where gate's package installs what fixes point to: a person has these paths,
    /// not the source tree (scripts/package-deb).
    static let installedDocs = "/usr/share/doc/gate"
    static let installedExample = "/usr/share/doc/gate/examples/gate.toml"
    static let installedTmpfiles = "/usr/lib/tmpfiles.d/gate.conf"
    static let installedGPIORule = "/usr/lib/udev/rules.d/99-gate-gpio.rules"

    public static func config(_ facts: ConfigFacts) -> DoctorFinding {
        switch facts {
        case .valid(let path, let origin):
            return .ok(.config, "\(path) (\(origin)) is valid")
        case .notFound(let searched, let suggested):
            let target = suggested ?? "/etc/gate/gate.toml"
            return .misconfigured(
                .config,
                "no configuration file found (looked in \(searched.joined(separator: ", ")))",
                fix: "run `gate config init --udp ESP32-ADDRESS` (as this account it writes \(target); "
                    + "with sudo /etc/gate/gate.toml, which the service reads), or copy \(installedExample) "
                    + "there, or pass --config PATH"
            )
        case .invalid(let path, let problems):
            let keys = problems.compactMap(\.key).reduce(into: [String]()) { list, key in
                if !list.contains(key) { list.append(key) }
            }
            let what = keys.isEmpty ? "correct \(path) as described" : "edit \(keys.joined(separator: ", ")) in \(path)"
            return .misconfigured(
                .config,
                problems.map(\.description).joined(separator: "\n"),
                fix: "\(what), then run `gate config check --config \(path)`"
            )
        }
    }

    /// Why no folder could be chosen at all (`RuntimePaths.resolve` failed).
    public static func unresolved(_ check: DoctorCheck, _ message: String) -> DoctorFinding {
        .unavailable(
            check,
            message,
            fix: "install gate's package, or make the folders with its tmpfiles.d entry "
                + "(`sudo systemd-tmpfiles --create \(installedTmpfiles)` makes /run/gate and /var/lib/gate), "
                + "or set $\(variable(check)) to a folder you can write"
        )
    }

    /// The runtime folder and its lock. `sharedUnwritable` is the deploy files'
    /// folder when it exists but this account cannot write it: openings then fall
    /// back to a private folder and no longer share the lock with the service.
    public static func runtime(
        _ folder: FolderFacts,
        lock: LockFacts,
        sharedUnwritable: String?,
        user: DoctorUser
    ) -> DoctorFinding {
        if let shared = sharedUnwritable {
            return .unavailable(
                .runtime,
                "\(shared) exists but is not writable for \(user.described): openings from this account "
                    + "use \(folder.path) and do not share the lock and the status with the service",
                fix: "sudo usermod -aG gate \(user.name), then log out and in again (or run `newgrp gate`)"
            )
        }
        if let failure = folderFailure(.runtime, folder, user: user) { return failure }
        switch lock {
        case .absent:
            return .ok(.runtime, "\(usable(folder, user: user)); no lock file yet")
        case .usable(let heldNow):
            let state = heldNow ? "an opening holds it now" : "free"
            return .ok(.runtime, "\(usable(folder, user: user)); the lock is readable and writable (\(state))")
        case .notUsable(let path, let why):
            let fix =
                folder.origin == .shared
                ? "sudo chgrp gate \(path) && sudo chmod 0660 \(path)"
                : "remove \(path) (the next opening makes it again) or make it readable and writable for \(user.name)"
            return .unavailable(
                .runtime,
                "the lock \(path) cannot be opened for reading and writing by \(user.described): \(why)",
                fix: fix
            )
        }
    }

    /// The environment variable that names the folder of a check (runtime or state).
    private static func variable(_ check: DoctorCheck) -> String {
        check == .state ? "GATE_STATE_DIR" : "GATE_RUNTIME_DIR"
    }

    /// The state folder (the history).
    public static func state(_ folder: FolderFacts, user: DoctorUser) -> DoctorFinding {
        if let failure = folderFailure(.state, folder, user: user) { return failure }
        return .ok(.state, usable(folder, user: user))
    }

    /// "/run/gate (shared, group gate) is writable for alice", or how it will be made.
    private static func usable(_ folder: FolderFacts, user: DoctorUser) -> String {
        let origin =
            switch folder.origin {
            case .environment(let variable): "from $\(variable)"
            case .shared: "shared, group gate"
            case .personal: "this account's own"
            }
        guard case .missing(let ancestor, _) = folder.state else {
            return "\(folder.path) (\(origin)) is writable for \(user.name)"
        }
        return
            "\(folder.path) (\(origin)) does not exist yet; the first opening makes it (\(ancestor) is writable for \(user.name))"
    }

    private static func folderFailure(_ check: DoctorCheck, _ folder: FolderFacts, user: DoctorUser) -> DoctorFinding? {
        let path = folder.path
        let elsewhere =
            switch folder.origin {
            case .environment(let variable): "point $\(variable) at a folder \(user.name) can write"
            case .shared: "sudo usermod -aG gate \(user.name), then log out and in again"
            case .personal: "set $\(variable(check)) to a folder \(user.name) can write"
            }
        switch folder.state {
        case .writable, .missing(_, creatable: true):
            return nil
        case .notDirectory:
            return .unavailable(check, "\(path) is not a folder", fix: "remove or rename \(path), or \(elsewhere)")
        case .notWritable(let why):
            let fix = folder.origin == .shared ? elsewhere : "as its owner: chmod u+rwx \(path); or \(elsewhere)"
            return .unavailable(check, "\(path) is not writable for \(user.described): \(why)", fix: fix)
        case .missing(let ancestor, creatable: false):
            return .unavailable(
                check,
                "\(path) does not exist and cannot be made: \(ancestor) is not writable for \(user.described)",
                fix: "create it for \(user.name) (sudo install -d -o \(user.name) -m 0700 \(path)), or \(elsewhere)"
            )
        }
    }

    public static func udp(_ facts: UDPFacts, host: String, file: String, mqttConfigured: Bool) -> DoctorFinding {
        let nameFix = "check udp.host in \(file), or the name service (/etc/hosts, DNS); an IP literal needs neither"
        let consequence =
            mqttConfigured ? "openings skip UDP at once and use MQTT" : "openings skip UDP and, with no [mqtt], fail"
        let networkFix =
            "check udp.host in \(file) (the ESP32's address on its LAN), or connect this machine to that network; "
            + "`ip -brief address` lists the networks it is on"
        switch facts {
        case .verdict(let address, .loopback):
            return .ok(.udp, "\(shown(host, address)) is on loopback; nothing was sent to its UDP port")
        case .verdict(let address, .onLink(let interface)):
            return .ok(
                .udp,
                "\(shown(host, address)) is on the network of \(interface); nothing was sent to its UDP port"
            )
        case .verdict(let address, .offLink):
            return .unavailable(
                .udp,
                "\(shown(host, address)) is not on a directly connected network: \(consequence)",
                fix: networkFix
            )
        case .unresolved(let message):
            return .unavailable(.udp, "\(message): \(consequence)", fix: nameFix)
        case .lookupTimedOut(let budget):
            return .unavailable(
                .udp,
                "no answer from the name service for \(host) within \(budget.humanReadable) (udp.timeout): "
                    + (mqttConfigured
                        ? "openings wait that long, then use MQTT" : "openings wait that long, then fail"),
                fix: nameFix
            )
        case .noInterfaceTable(let message):
            return .unavailable(
                .udp,
                "cannot read this machine's interfaces (\(message)): \(consequence)",
                fix: networkFix
            )
        }
    }

    /// `esp32.lan (192.168.1.50)`, or the literal alone.
    static func shown(_ host: String, _ address: IPAddress) -> String {
        host == "\(address)" ? host : "\(host) (\(address))"
    }

    public static func password(_ facts: PasswordFacts, username: String) -> DoctorFinding {
        let store =
            "`gate secret set mqtt-password` (desktop session); for the service: "
            + "`systemd-ask-password -n | sudo systemd-creds encrypt --name=mqtt-password - /etc/credstore.encrypted/mqtt-password` "
            + "(\(installedDocs)/credentials.md)"
        switch facts {
        case .found(let source, let location):
            let place = location.map { "\(source), \($0)" } ?? source
            return .ok(.mqttPassword, "the password of MQTT user \(username) was found in \(place)")
        case .missing(let notes):
            let tried = notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))"
            return .misconfigured(
                .mqttPassword,
                "mqtt.username is \(username) but no MQTT password was found\(tried)",
                fix: store
            )
        case .unusable(let source, let why):
            return .misconfigured(
                .mqttPassword,
                "the MQTT password from \(source) cannot be used: \(why)",
                fix: "store it again: " + store
            )
        }
    }
}
