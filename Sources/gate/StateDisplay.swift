import GateCore
import GateSystem
import Plumbing
import Synchronization

/// Shows an opening's states: live on one line for a person at a terminal,
/// one line per change for logs and pipes, nothing when JSON is asked for.
///
/// The live line is redrawn by a ticker as well as on each change, so the
/// elapsed time keeps moving while `gate` waits for the relay.
final class StateDisplay: Sendable {
    enum Mode {
        case live
        case lines
        case quiet
    }

    private struct Line {
        var text: String?
        var finished = false
    }

    let mode: Mode
    private let start = MonotonicClock.now()
    private let line = Mutex(Line())
    /// Stdout's live line, which log lines on the same terminal go around.
    private let live = LiveLine(fd: 1)
    /// Redraws the live line (its elapsed time) until the display finishes.
    private let ticker = Mutex<Task<Void, Never>?>(nil)

    init(mode: Mode) {
        self.mode = mode
        if mode == .live {
            live.activate()
            let task = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    self?.redraw()
                }
            }
            ticker.withLock { $0 = task }
        }
    }

    deinit {
        ticker.withLock { $0?.cancel() }
    }

    func show(_ state: GateState, adapter: AdapterKind?) {
        switch mode {
        case .quiet:
            return
        case .lines:
            let elapsed = MonotonicClock.now().duration(since: start).milliseconds
            Terminal.printLine("\(Self.words(for: state, adapter: adapter)) (+\(elapsed) ms)")
        case .live:
            line.withLock { $0.text = Self.words(for: state, adapter: adapter) + (state.isBusy ? "…" : "") }
            redraw()
        }
    }

    /// An attempt began: on the live line only, until its trigger leaves (`triggering`
    /// is never shown before that), so that a slow broker is not a blank terminal.
    func attempting(_ adapter: AdapterKind) {
        guard mode == .live else { return }
        line.withLock { $0.text = Self.attemptWords(adapter) }
        redraw()
    }

    /// Rewrites the live line in place: carriage return, erase line, text.
    private func redraw() {
        let elapsed = MonotonicClock.now().duration(since: start).milliseconds
        line.withLock { line in
            guard !line.finished, let text = line.text else { return }
            live.draw("\(text) (\(elapsed) ms)")
        }
    }

    /// Stops the live line so that the result starts on a fresh one.
    func finish() {
        ticker.withLock { $0?.cancel() }
        line.withLock { line in
            line.finished = true
            live.clear()
        }
    }

    /// The failure for a person: what happened, each adapter's part, and what to do
    /// next (`OpeningAdvice`); no error names (those are in `--json` and the logs).
    func failureText(_ result: OpeningResult, problems: [String], nextStep: String?) -> String {
        guard let error = result.error else { return result.message }
        var lines: [String]
        if error == .operationInProgress || result.attempts.isEmpty && problems.isEmpty {
            // The lock's holder, the cooldown, a lost daemon: the message is the story.
            lines = ["gate: \(result.message)"]
        } else {
            lines = ["gate: \(error.summary)"]
            lines += problems.isEmpty ? result.attempts.map { "  \(Self.line(for: $0))" } : problems.map { "  \($0)" }
        }
        if let nextStep { lines.append(nextStep) }
        return lines.joined(separator: "\n")
    }

    /// `udp (2001 ms): no answer within 2.0 s`; `mqtt (not tried): not configured (no [mqtt] table)`.
    static func line(for attempt: AttemptRecord) -> String {
        let took = attempt.duration.map { "\($0.milliseconds) ms" } ?? "not tried"
        return "\(attempt.adapter) (\(took)): \(attempt.reason?.description ?? "relay cycle confirmed")"
    }

    static func attemptWords(_ adapter: AdapterKind) -> String {
        switch adapter {
        case .udp: return "sending the trigger via udp…"
        case .mqtt: return "connecting to the MQTT broker…"
        }
    }

    /// A state in words, for the live line and the lines of a pipe.
    static func words(for state: GateState, adapter: AdapterKind?) -> String {
        let via = adapter.map { " via \($0)" } ?? ""
        switch state {
        case .ready: return "ready"
        case .triggering: return "trigger sent\(via): waiting for the relay to activate"
        case .waitingForRelayClose: return "relay activated\(via): waiting for the relay to release"
        case .timeout: return "relay cycle not confirmed\(via)"
        case .error: return "failed"
        }
    }
}
