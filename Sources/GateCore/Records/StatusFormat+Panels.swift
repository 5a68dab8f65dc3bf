/// The words for one record, and the markup each panel wraps them in.
///
/// Adapter, error and source names come from `status.json`, a file other users of
/// the group can write: they are escaped for each panel's markup, never trusted.
struct StatusView {
    let record: StatusRecord
    let clock: StatusClock
    let look: StatusLook

    init(record: StatusRecord, clock: StatusClock) {
        self.record = record
        self.clock = clock
        self.look = StatusLook(record)
    }

    // MARK: words

    /// The `text` format: `ready (last: success via udp, 412 ms, 10:00:01)`.
    var sentence: String {
        switch record.state {
        case .ready:
            guard let last = record.last else { return "ready" }
            return "ready (last: \(summary(of: last)))"
        case .triggering:
            return "opening: waiting for relay activation\(adapterInParentheses)"
        case .waitingForRelayClose:
            return "opening: waiting for relay release\(adapterInParentheses)"
        case .timeout, .error:
            var words = record.state.rawValue
            if let resetAt = record.resetAt { words += " until \(clock.timeOfDay(resetAt))" }
            if let last = record.last { words += " (last: \(Self.failure(last)))" }
            return words
        }
    }

    /// The panel label: short enough for a bar, the colour tells the rest.
    var label: String {
        switch record.state {
        case .ready: return look == .interrupted ? "gate ready (interrupted)" : "gate ready"
        case .triggering: return "gate triggering\(adapterInParentheses)"
        case .waitingForRelayClose: return "gate relay on\(adapterInParentheses)"
        case .timeout, .error:
            let why = record.last?.error.map { " (\(GateKeeperError.brief(recorded: $0)))" } ?? ""
            return "gate \(record.state.rawValue)\(why)"
        }
    }

    /// i3bar's `short_text`, shown when the bar runs out of room.
    var shortLabel: String {
        switch look {
        case .ready: return "gate ok"
        case .busy: return "gate ..."
        case .failed: return "gate !"
        case .interrupted: return "gate ok?"
        }
    }

    /// Tooltip lines: what is happening, then what happened last.
    var details: [String] {
        var lines: [String] = []
        let since = clock.timeOfDay(record.since)
        let asker = record.source.map { ", asked by \($0)" } ?? ""
        switch record.state {
        case .ready where record.last == nil && record.source == nil:
            lines.append("Gate ready: no opening recorded yet")
        case .ready:
            lines.append("Gate ready since \(since)")
        case .triggering, .waitingForRelayClose:
            let step =
                record.state == .triggering
                ? "waiting for the relay to activate" : "relay activated, waiting for its release"
            lines.append("Opening: \(step)\(record.adapter.map { " via \($0)" } ?? "") (since \(since)\(asker))")
        case .timeout, .error:
            let until = record.resetAt.map { ", ready again at \(clock.timeOfDay($0))" } ?? ""
            lines.append("Gate \(record.state.rawValue) since \(since)\(until)")
        }
        if let last = record.last {
            lines.append("Last: \(summary(of: last)) (\(last.source))")
            if last.outcome == .interrupted {
                lines.append("The opener stopped mid-cycle: the relay cycle was not confirmed.")
            }
        }
        return lines
    }

    /// The error in words (its name stays in the record), else the outcome.
    private static func failure(_ last: StatusRecord.Last) -> String {
        last.error.map(GateKeeperError.brief(recorded:)) ?? last.outcome.rawValue
    }

    private var adapterInParentheses: String {
        record.adapter.map { " (\($0))" } ?? ""
    }

    /// `success via udp, 412 ms, 10:00:01`; `ESP32 not reached, 2001 ms, 10:00:02`; `interrupted`.
    private func summary(of last: StatusRecord.Last) -> String {
        // An interrupted opening has no finish time worth showing: it is when it was last seen.
        if last.outcome == .interrupted { return "interrupted" }
        var parts = [last.outcome == .success ? "success" : Self.failure(last)]
        if let adapter = last.adapter { parts[0] += " via \(adapter)" }
        if let duration = last.durationMs { parts.append("\(duration) ms") }
        parts.append(clock.timeOfDay(last.finishedAt))
        return parts.joined(separator: ", ")
    }

    // MARK: panels

    var waybar: String {
        JSONValue.object([
            ("text", .string(SafeText.markup(label))),
            ("tooltip", .string(details.map(SafeText.markup).joined(separator: "\n"))),
            ("class", .string(look.rawValue)),
            ("alt", .string(record.state.rawValue)),
        ]).serialized()
    }

    var polybar: String {
        "%{F\(look.color)}\(Self.polybarText(label))%{F-}"
    }

    var i3blocksRaw: String {
        [Self.oneLine(label), Self.oneLine(shortLabel), look.color].joined(separator: "\n")
    }

    var i3blocksJSON: String {
        JSONValue.object([
            ("full_text", .string(label)),
            ("short_text", .string(shortLabel)),
            ("color", .string(look.color)),
        ]).serialized()
    }

    var genmon: String {
        let text = "<span foreground=\"\(look.color)\">\(SafeText.markup(label))</span>"
        let tooltip = details.map(SafeText.markup).joined(separator: "&#10;")
        return "<txt>\(text)</txt><tool>\(tooltip)</tool><txtclick>gate open --source widget</txtclick>"
    }

    // MARK: escaping

    /// polybar reads `%{…}` as a formatting tag; `%%` is a literal `%`.
    static func polybarText(_ text: String) -> String {
        SafeText.escaped(text, as: .polybar)
    }

    /// Unsafe scalars dropped: line-oriented readers must get one line per update.
    static func oneLine(_ text: String) -> String {
        SafeText.escaped(text, as: .dropped)
    }
}
