import ArgumentParser
import GateCore
import GateSystem

struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show the last openings: when, who asked, adapter, outcome, duration.",
        discussion: """
            Read from history.jsonl in the state folder ($GATE_STATE_DIR, else /var/lib/gate \
            when writable, else $XDG_STATE_HOME/gate). Oldest first. With --json, one JSON \
            array of the N most recent entries.

            The file is appended to by every member of the group gate: it is read from its \
            end, and lines that are not entries as gate writes them (control characters, \
            overlong fields, times out of range) are skipped. Exit codes: 0 shown; 64 bad \
            command line; 74 the history file cannot be used (not a regular file); 78 no \
            folder can be found.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Option(help: ArgumentHelp("How many of the most recent openings to show.", valueName: "n"))
    var limit = 20

    @Flag(help: "Print one JSON array, oldest first.")
    var json = false

    func validate() throws {
        guard limit >= 1, limit <= 100_000 else {
            throw ValidationError("--limit must be between 1 and 100000")
        }
    }

    func run() throws {
        _ = globals.makeLogger()
        let paths: RuntimePaths
        switch RuntimePaths.resolve() {
        case .success(let resolved): paths = resolved
        case .failure(let error):
            Terminal.printError("gate: \(error.message)")
            throw ExitCode(ExitStatus.configuration)
        }
        let entries: [HistoryLog.Entry]
        switch HistoryLog.load(paths.historyFile, limit: limit) {
        case .success(let loaded): entries = loaded
        case .failure(let error):
            Terminal.printError("gate: \(error)")
            throw ExitCode(74)  // EX_IOERR
        }
        if json {
            Terminal.printLine(JSONValue.array(entries.map(\.json)).serialized())
            return
        }
        if entries.isEmpty {
            Terminal.printLine("no openings recorded in \(paths.historyFile)")
            return
        }
        for entry in entries {
            Terminal.printLine(Self.line(entry, clock: .local))
        }
    }

    /// `2026-11-27 10:15:02 +01:00  cli (uid 1000)  udp  timeout (relay cycle not confirmed)  2001 ms`:
    /// local time with its offset, the error in words (its name stays in `--json`).
    static func line(_ entry: HistoryLog.Entry, clock: StatusClock) -> String {
        // Validated when read; escaped all the same: the file is shared (docs/CONTRACT.md#shared-folders).
        let safe: (String) -> String = SafeText.escaped
        let who = entry.uid.map { "\(safe(entry.source)) (uid \($0))" } ?? safe(entry.source)
        let outcome =
            entry.error.map { "\(safe(entry.outcome)) (\(GateKeeperError.brief(recorded: $0)))" } ?? safe(entry.outcome)
        let adapter = entry.adapter.map(safe) ?? "-"
        return "\(safe(clock.dateTime(entry.at)))  \(who)  \(adapter)  \(outcome)  \(entry.durationMs) ms"
    }
}
