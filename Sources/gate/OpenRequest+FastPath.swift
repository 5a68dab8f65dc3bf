import GateCore
import Logging

/// Reads the common forms of `gate open` without ArgumentParser.
///
/// Why: ArgumentParser builds its argument sets by reflection, and the Swift
/// runtime's type and conformance lookups behind that cost about 14 of the 19
/// million instructions of a whole `gate open` (callgrind, release build), some
/// 4 ms of every opening on this kind of machine. An opening is latency that
/// people feel at the gate; help, errors and every other command are not.
///
/// The rule that keeps the two readers from drifting: this accepts only a strict
/// subset, each option at most once (`-v` aside) and every value already valid,
/// and returns nil for anything else, which then goes to ArgumentParser for its
/// full parsing, help and error messages. `FastPathTests` checks that both
/// readers agree on every form this accepts.
extension OpenRequest {
    init?(fastArguments arguments: some Collection<String>) {
        var via: AdapterSelection?
        var json = false
        var source: String?
        var force = false
        var direct = false
        var config: String?
        var verbose = 0
        var logLevel: Logger.Level?
        var sawOpen = false

        var tokens = arguments.makeIterator()
        while let token = tokens.next() {
            if token == "open" {
                guard !sawOpen else { return nil }
                sawOpen = true
                continue
            }
            guard token.hasPrefix("-") else { return nil }
            // `--name=value` or `--name value`; a value never starts with "-" here.
            var name = token
            var inlineValue: String?
            if token.hasPrefix("--"), let equals = token.firstIndex(of: "=") {
                name = String(token[..<equals])
                inlineValue = String(token[token.index(after: equals)...])
            }
            func value() -> String? {
                if let inlineValue { return inlineValue.isEmpty ? nil : inlineValue }
                guard let next = tokens.next(), !next.isEmpty, !next.hasPrefix("-") else { return nil }
                return next
            }
            let global =
                name == "--config" || name == "--log-level" || name == "--verbose"
                || (name.count >= 2 && name.hasPrefix("-") && !name.hasPrefix("--")
                    && name.dropFirst().allSatisfy { $0 == "v" })
            // Before the subcommand only the global options are the root command's.
            guard sawOpen || global else { return nil }
            switch name {
            case "--via":
                guard via == nil, let text = value(), let selection = AdapterSelection(rawValue: text) else {
                    return nil
                }
                via = selection
            case "--json":
                guard !json, inlineValue == nil else { return nil }
                json = true
            case "--source":
                guard source == nil, let text = value(), OpeningSource.isValid(text) else { return nil }
                source = text
            case "--force":
                guard !force, inlineValue == nil else { return nil }
                force = true
            case "--direct":
                guard !direct, inlineValue == nil else { return nil }
                direct = true
            case "--config":
                guard config == nil, let text = value() else { return nil }
                config = text
            case "--log-level":
                guard logLevel == nil, let text = value(), let level = LogLevelArgument(argument: text)?.level else {
                    return nil
                }
                logLevel = level
            case "--verbose":
                guard inlineValue == nil else { return nil }
                verbose += 1
            default:
                guard inlineValue == nil, global else { return nil }
                verbose += name.count - 1
            }
        }
        guard sawOpen else { return nil }
        self.init(
            via: via ?? .auto,
            json: json,
            source: source ?? "cli",
            force: force,
            direct: direct,
            config: config,
            logLevel: logLevel ?? GlobalOptions.level(verbose: verbose)
        )
    }
}
