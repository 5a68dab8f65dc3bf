import GateCore
import GateSystem

/// Shows an opening's states: live on one line for a person at a terminal,
/// one line per change for logs and pipes, nothing when JSON is asked for.
final class StateDisplay {
    enum Mode {
        case live
        case lines
        case quiet
    }

    let mode: Mode
    private let start = MonotonicClock.now()
    private var lineOpen = false

    init(mode: Mode) {
        self.mode = mode
    }

    func show(_ state: GateState, adapter: AdapterKind?) {
        let elapsed = MonotonicClock.now().duration(since: start).milliseconds
        let text = Self.words(for: state, adapter: adapter)
        switch mode {
        case .quiet:
            return
        case .lines:
            Terminal.printLine("\(state.rawValue)\(adapter.map { " via \($0)" } ?? "") (+\(elapsed) ms)")
        case .live:
            // Carriage return and erase-line: the same line is rewritten in place.
            Terminal.write("\r\u{1B}[2K\(text) (\(elapsed) ms)")
            lineOpen = true
        }
    }

    /// Ends the live line so that the result starts on a fresh one.
    func finish() {
        if lineOpen {
            Terminal.write("\r\u{1B}[2K")
            lineOpen = false
        }
    }

    func failureText(_ result: OpeningResult, problems: [String]) -> String {
        guard let error = result.error else { return result.message }
        var lines = ["gate: \(error.summary) (\(error.rawValue))"]
        if !problems.isEmpty {
            lines += problems.map { "  \($0)" }
        } else if result.attempts.isEmpty {
            lines.append("  \(result.message)")
        } else {
            for attempt in result.attempts {
                let took = attempt.duration.map { " after \($0.milliseconds) ms" } ?? ""
                lines.append("  \(attempt.adapter): \(attempt.outcome.rawValue)\(took): \(attempt.reason ?? "")")
            }
        }
        return lines.joined(separator: "\n")
    }

    static func words(for state: GateState, adapter: AdapterKind?) -> String {
        let via = adapter.map { " via \($0)" } ?? ""
        switch state {
        case .ready: return "ready"
        case .triggering: return "triggering\(via): waiting for the relay to activate…"
        case .waitingForRelayClose: return "relay activated\(via): waiting for the release…"
        case .timeout: return "timeout\(via)"
        case .error: return "error\(via)"
        }
    }
}
