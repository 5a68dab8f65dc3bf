import GateCore
import GateSystem
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
        var open = false
        var finished = false
    }

    let mode: Mode
    private let start = MonotonicClock.now()
    private let line = Mutex(Line())
    /// Stops the live line's ticker. A closure rather than the `Task` itself: a stored
    /// `Task<Void, Never>?` is destroyed through its generic metadata, whose first use
    /// has the Swift runtime search every conformance record of the binary for
    /// `Never: Error`, at the end of every `gate open`.
    private let stopTicker = Mutex<(@Sendable () -> Void)?>(nil)

    init(mode: Mode) {
        self.mode = mode
        if mode == .live {
            let task = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    self?.redraw()
                }
            }
            stopTicker.withLock { $0 = { task.cancel() } }
        }
    }

    deinit {
        stopTicker.withLock { $0?() }
    }

    func show(_ state: GateState, adapter: AdapterKind?) {
        switch mode {
        case .quiet:
            return
        case .lines:
            let elapsed = MonotonicClock.now().duration(since: start).milliseconds
            Terminal.printLine("\(state.rawValue)\(adapter.map { " via \($0)" } ?? "") (+\(elapsed) ms)")
        case .live:
            line.withLock { $0.text = Self.words(for: state, adapter: adapter) }
            redraw()
        }
    }

    /// Rewrites the live line in place: carriage return, erase line, text.
    private func redraw() {
        let elapsed = MonotonicClock.now().duration(since: start).milliseconds
        line.withLock { line in
            guard !line.finished, let text = line.text else { return }
            Terminal.write("\r\u{1B}[2K\(text) (\(elapsed) ms)")
            line.open = true
        }
    }

    /// Stops the live line so that the result starts on a fresh one.
    func finish() {
        stopTicker.withLock { $0?() }
        line.withLock { line in
            if line.open {
                Terminal.write("\r\u{1B}[2K")
            }
            line.open = false
            line.finished = true
        }
    }

    func failureText(_ result: OpeningResult, problems: [String]) -> String {
        guard let error = result.error else { return result.message }
        if error == .operationInProgress {
            // The lock's holder or the cooldown's time left: the message is the whole story.
            return "gate: \(result.message) (\(error.rawValue))"
        }
        var lines = ["gate: \(error.summary) (\(error.rawValue))"]
        if !problems.isEmpty {
            lines += problems.map { "  \($0)" }
        } else if result.attempts.isEmpty {
            lines.append("  \(result.message)")
        } else {
            for attempt in result.attempts {
                let took = attempt.duration.map { " after \($0.milliseconds) ms" } ?? ""
                lines.append(
                    "  \(attempt.adapter): \(attempt.outcome.rawValue)\(took): \(attempt.reason?.description ?? "")"
                )
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
