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
        let entries = HistoryLog.read(paths.historyFile, limit: limit)
        if json {
            Terminal.printLine(JSONValue.array(entries.map(\.json)).serialized())
            return
        }
        if entries.isEmpty {
            Terminal.printLine("no openings recorded in \(paths.historyFile)")
            return
        }
        for entry in entries {
            let who = entry.uid.map { "\(entry.source) (uid \($0))" } ?? entry.source
            let outcome = entry.error.map { "\(entry.outcome) (\($0))" } ?? entry.outcome
            Terminal.printLine("\(entry.at)  \(who)  \(entry.adapter ?? "-")  \(outcome)  \(entry.durationMs) ms")
        }
    }
}
