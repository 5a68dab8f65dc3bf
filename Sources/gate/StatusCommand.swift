import ArgumentParser
import GateCore
import GateSystem

#if canImport(Glibc)
import Glibc
#endif

/// Blocking on purpose: `--watch` waits in poll(2) on the main thread, which nothing
/// else in this process needs, and a one-shot read is over in a millisecond.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the gate's state from the status file; --watch keeps printing it for panels.",
        discussion: """
            The state is what every opener (shell, widget, daemon) wrote to status.json in \
            the runtime folder, as a reader should see it: a failure is shown until its \
            reset time, and an opening whose process died is shown as ready with the last \
            outcome "interrupted". No status file yet means ready.

            Formats: text (a sentence), json (the status record), waybar (a custom module \
            with "return-type": "json"), polybar (a custom/script label with colour tags; \
            tail = true with --watch), i3blocks (three raw lines; with --watch one JSON \
            object per line, for interval=persist and format=json), genmon \
            (xfce4-genmon-plugin's <txt>, <tool> and <txtclick>, clicking opens the gate).

            --watch prints the state at once and then one line per change, from inotify \
            events on the runtime folder (no polling of the file), and exits 0 when its \
            reader closes the pipe.

            The status file is shared by the group gate and not trusted: a FIFO, a link or \
            anything else than a regular file there is an error naming it (with --watch, said \
            on stderr until the file is usable again), and a record whose members are not what \
            gate writes (a time out of range, control characters) is shown as no record.

            Exit codes: 0 shown (or the watch's reader went away); 64 bad command line; \
            74 the status file cannot be used, the runtime folder cannot be watched or stdout \
            fails; 78 no runtime folder can be found, or /run/gate exists but this account \
            cannot use it.
            """
    )

    @OptionGroup var globals: GlobalOptions

    @Option(
        help: ArgumentHelp(
            "How to print the state: text, json, waybar, polybar, i3blocks or genmon.",
            valueName: "format"
        )
    )
    var format: StatusFormat = .text

    @Flag(help: "Print the state again on every change, one line each, until the reader goes away.")
    var watch = false

    func run() throws {
        // `gate status | head -c 1` must not die of SIGPIPE with status 141.
        signal(SIGPIPE, SIG_IGN)
        let paths: RuntimePaths
        switch RuntimePaths.resolve() {
        case .success(let resolved):
            paths = resolved
        case .failure(let error):
            Terminal.printError("gate: cannot show the state: \(error.message)")
            throw ExitCode(ExitStatus.configuration)
        }
        let clock = StatusClock.local
        let format = self.format
        guard watch else {
            switch StatusFile.effective(paths: paths) {
            case .success(let record):
                Terminal.printLine(format.render(record, clock: clock))
                return
            case .failure(let error):
                Terminal.printError("gate: \(error)")
                throw ExitCode(74)  // EX_IOERR
            }
        }
        let watcher = StatusWatcher(paths: paths) { format.renderUpdate($0, clock: clock) }
        switch watcher.run() {
        case .readerGone:
            return
        case .failed(let error):
            Terminal.printError("gate: cannot watch \(paths.runtimeDirectory): \(error)")
            throw ExitCode(74)  // EX_IOERR
        }
    }
}

extension StatusFormat: ExpressibleByArgument {}

extension StatusClock {
    /// The machine's time zone, at each timestamp's own date (daylight saving included).
    static let local = StatusClock { seconds in
        var time = time_t(seconds)
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else { return 0 }
        return parts.tm_gmtoff
    }
}
