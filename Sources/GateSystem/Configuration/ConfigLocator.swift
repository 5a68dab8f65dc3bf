import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Finds the configuration file in the order of docs/CONTRACT.md#configuration and loads it.
public struct ConfigLocator: Sendable {
    /// Where the file came from, for messages.
    public enum Origin: String, Sendable {
        case option = "--config"
        case environment = "$GATE_CONFIG"
        case user = "user configuration"
        case system = "system configuration"
    }

    public struct Candidate: Sendable, Hashable {
        public var path: String
        public var origin: Origin
    }

    public var explicitPath: String?
    public var environment: [String: String]

    public init(explicitPath: String?, environment: [String: String] = ProcessEnvironment.current()) {
        self.explicitPath = explicitPath
        self.environment = environment
    }

    /// Every place looked at, first found wins.
    public var candidates: [Candidate] {
        var list: [Candidate] = []
        if let explicitPath { list.append(Candidate(path: explicitPath, origin: .option)) }
        if let path = environment["GATE_CONFIG"], !path.isEmpty {
            list.append(Candidate(path: path, origin: .environment))
        }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            list.append(Candidate(path: xdg + "/gate/gate.toml", origin: .user))
        } else if let home = environment["HOME"], !home.isEmpty {
            list.append(Candidate(path: home + "/.config/gate/gate.toml", origin: .user))
        }
        list.append(Candidate(path: "/etc/gate/gate.toml", origin: .system))
        return list
    }

    /// The file that would be used. A path given with `--config` or `$GATE_CONFIG` is
    /// used as it is, even when missing (that is an error, not a reason to look elsewhere).
    public func locate() -> Result<Candidate, ConfigError> {
        for candidate in candidates {
            switch candidate.origin {
            case .option, .environment:
                return .success(candidate)
            case .user, .system:
                if access(candidate.path, F_OK) == 0 { return .success(candidate) }
            }
        }
        let searched = candidates.map(\.path).joined(separator: ", ")
        return .failure(
            ConfigError(
                problems: [ConfigProblem(file: "", message: "no configuration file found (looked in \(searched))")],
                nextStep: "Write one with `gate config init --udp HOST` (HOST: the ESP32's address), then edit it."
            )
        )
    }

    /// Locates, reads, parses and validates the configuration.
    public func load() -> Result<(GateConfig, Candidate), ConfigError> {
        let candidate: Candidate
        switch locate() {
        case .success(let found): candidate = found
        case .failure(let error): return .failure(error)
        }
        let text: String
        switch FileText.read(candidate.path, limit: 1 << 20) {
        case .success(let read): text = read
        case .failure(let problem):
            let words =
                problem.code == EILSEQ ? "the file is not UTF-8 text" : "cannot read the configuration: \(problem)"
            let next =
                problem.code == ENOENT
                ? "Check the path, or write a starter file there with `gate config init --config \(candidate.path)`."
                : ConfigError.fixTheFile
            return .failure(
                ConfigError(problems: [ConfigProblem(file: candidate.path, message: words)], nextStep: next)
            )
        }
        let parsed: GateConfig
        do {
            parsed = try GateConfig.parse(toml: text, file: candidate.path)
        } catch {
            return .failure(error)
        }
        // The one check that needs the file system: a CA bundle that cannot be read
        // would only fail later, inside the TLS handshake, with worse words.
        var config = parsed
        if let mqtt = config.mqtt, let caFile = mqtt.caFile {
            let path = caFile.hasPrefix("/") ? caFile : Self.directory(of: candidate.path) + "/" + caFile
            config.mqtt?.caFile = path
            if access(path, R_OK) != 0 {
                return .failure(
                    ConfigError(problems: [
                        ConfigProblem(
                            file: candidate.path,
                            key: "mqtt.ca_file",
                            message: "cannot read \(path): \(SystemError.text(for: errno))"
                        )
                    ])
                )
            }
        }
        return .success((config, candidate))
    }

    /// The file `path` names, links resolved, or nil when it does not exist: how the
    /// daemon and `gate open` tell whether they read the same configuration.
    public static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
