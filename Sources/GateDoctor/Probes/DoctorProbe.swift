import GateControl
import GateCore
import GateSystem
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What `gate doctor` reads from this machine (files, folders, interfaces, the
/// password sources), as the plain facts that `DoctorVerdict` judges. Nothing here
/// creates, changes or sends anything.
public enum DoctorProbe {
    /// The configuration search and validation of `gate open`; the loaded
    /// configuration and its file when it is valid.
    public static func config(
        explicitPath: String?,
        environment: [String: String]
    ) -> (ConfigFacts, (GateConfig, String)?) {
        let locator = ConfigLocator(explicitPath: explicitPath, environment: environment)
        if case .failure = locator.locate() {
            let suggested = locator.candidates.first { $0.origin == .user }?.path
            return (.notFound(searched: locator.candidates.map(\.path), suggested: suggested), nil)
        }
        switch locator.load() {
        case .success(let (config, candidate)):
            return (.valid(path: candidate.path, origin: candidate.origin.rawValue), (config, candidate.path))
        case .failure(let error):
            let path =
                (try? locator.locate().get())?.path ?? error.problems.first.map(\.file).flatMap {
                    $0.isEmpty ? nil : $0
                } ?? "the configuration"
            return (.invalid(path: path, problems: error.problems), nil)
        }
    }

    /// The account the checks run as.
    public static func user() -> DoctorUser {
        let uid = geteuid()
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else {
            return DoctorUser(name: "uid \(uid)", uid: uid)
        }
        return DoctorUser(name: String(cString: name), uid: uid)
    }

    /// Who answers on the runtime folder's control socket, and whether `gate open`
    /// would hand it its openings.
    public static func daemon(_ paths: RuntimePaths) -> DaemonFacts {
        let socket = paths.controlSocket
        switch ControlClient.who(paths: paths) {
        case .noSocket:
            return .absent(socket: socket)
        case .nobodyAnswers(let error) where error.code == ECONNREFUSED:
            return .stale(socket: socket)
        case .nobodyAnswers(let error):
            return .unusable(socket: socket, why: error.description)
        case .answered(let daemon, let peer):
            return .answered(daemon, peerUID: peer.uid, socket: socket)
        case .untrusted(let peer):
            return .untrusted(pid: peer.pid, uid: peer.uid, socket: socket)
        case .failed(let why):
            return .unusable(socket: socket, why: why)
        }
    }

    /// The runtime folder an opening would use, its lock, and whether the shared
    /// `/run/gate` exists but was passed over because this account cannot write it.
    public static func runtime(
        _ paths: RuntimePaths,
        environment: [String: String]
    ) -> (FolderFacts, LockFacts, sharedUnwritable: String?) {
        let shared = RuntimePaths.sharedRuntimeDirectory
        let runtime = folder(paths.runtimeDirectory, variable: "GATE_RUNTIME_DIR", shared: shared, environment)
        let sharedUnwritable = runtime.origin == .personal && access(shared, F_OK) == 0 ? shared : nil
        let lock: LockFacts
        // Opened the way an opener opens it (SharedFile: no link followed, a regular file).
        switch SharedFile.open(paths.lockFile, access: .readWrite) {
        case .success(let fd):
            close(fd)
            // A shared flock taken and dropped at once: it never blocks an opener for long.
            lock = .usable(heldNow: OpeningLock.isHeld(path: paths.lockFile))
        case .failure(let error) where error.problem == .missing:
            lock = .absent
        case .failure(let error):
            lock = .notUsable(path: paths.lockFile, why: error.reason)
        }
        return (runtime, lock, sharedUnwritable)
    }

    /// The state folder (the history).
    public static func state(_ paths: RuntimePaths, environment: [String: String]) -> FolderFacts {
        folder(paths.stateDirectory, variable: "GATE_STATE_DIR", shared: "/var/lib/gate", environment)
    }

    /// A folder and the rule that chose it: `variable` when set, else the deploy files'
    /// `shared` folder, else the account's own.
    private static func folder(
        _ path: String,
        variable: String,
        shared: String,
        _ environment: [String: String]
    ) -> FolderFacts {
        let origin: FolderFacts.Origin =
            RuntimePaths.nonEmpty(environment[variable]) != nil
            ? .environment(variable)
            : (path == shared ? .shared : .personal)
        return FolderFacts(path: path, origin: origin, state: folderState(path))
    }

    /// `access(2)` with this process's ids: what `gate` itself will be allowed to do.
    static func folderState(_ path: String) -> FolderFacts.State {
        var info = stat()
        if stat(path, &info) != 0 {
            guard errno == ENOENT else { return .notWritable(why: SystemError("stat").description) }
            let ancestor = nearestExisting(above: path)
            return .missing(ancestor: ancestor, creatable: RuntimePaths.isWritableDirectory(ancestor))
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return .notDirectory }
        guard access(path, W_OK | X_OK) == 0 else { return .notWritable(why: SystemError("access").description) }
        return .writable
    }

    private static func nearestExisting(above path: String) -> String {
        var current = path
        while true {
            let parent = ConfigLocator.directory(of: current)
            if parent == current || access(parent, F_OK) == 0 { return parent }
            current = parent
        }
    }

    /// Where an opening would send its UDP trigger, judged by the on-link rule.
    /// Only resolves the name (an IP literal needs no lookup), within `udp.timeout` as
    /// an opening would; sends nothing.
    public static func udp(_ udp: UDPConfig) -> UDPFacts {
        let budget = Duration.seconds(fromConfig: udp.timeout)
        switch DoctorLookup.resolve(host: udp.host, port: udp.port, within: budget) {
        case nil:
            return .lookupTimedOut(budget)
        case .failure(let failure):
            return .unresolved(failure.message)
        case .success(let address):
            if address.ip.isLoopback { return .verdict(address.ip, .loopback) }
            switch InterfaceTable.current() {
            case .success(let table): return .verdict(address.ip, LinkVerdict.of(address.ip, in: table))
            case .failure(let error): return .noInterfaceTable(error.description)
            }
        }
    }

    /// Asks the password sources in an opening's order. The secret is returned for
    /// the broker check only; the facts never hold it.
    public static func password(environment: [String: String]) -> (PasswordFacts, Secret?) {
        var notes: [String] = []
        for source in AdapterFactory.credentials(environment: environment).sources {
            switch source.lookup(account: CredentialLookup.mqttPasswordAccount) {
            case .found(let secret):
                return (.found(source: source.name, location: location(of: source, environment: environment)), secret)
            case .notFound:
                notes.append("\(source.name): no entry")
            case .unavailable(let why):
                notes.append("\(source.name): \(why)")
            case .failed(let why):
                return (.unusable(source: source.name, why: why), nil)
            }
        }
        return (.missing(notes: notes), nil)
    }

    private static func location(of source: any SecretSource, environment: [String: String]) -> String? {
        if source is SystemdCredentials, let directory = environment["CREDENTIALS_DIRECTORY"] {
            return "\(directory)/\(CredentialLookup.mqttPasswordAccount)"
        }
        if source is SecretServiceSource {
            return "schema \(SecretServiceStore.schemaName), account \(CredentialLookup.mqttPasswordAccount)"
        }
        return nil
    }
}
