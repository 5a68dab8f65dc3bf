/// How `gate status` prints a record: for people, for scripts, and for the
/// desktop panels that show the gate (SPEC §3).
///
/// `render` gives what one run prints; `renderUpdate` gives one `--watch` update.
/// Every update is a single line, because each panel below reads a stream line by
/// line. Per format, what the panel expects:
///
/// - `text`: one sentence, e.g. `ready (last: success via udp, 412 ms, 10:00:01)`.
/// - `json`: the effective record as in `status.json` (SPEC §6), one line.
/// - `waybar`: a custom module with `"return-type": "json"`; one object per line with
///   `text`, `tooltip`, `class` (`ready`, `busy`, `failed`, `interrupted`) and `alt`
///   (the state, for `format-icons`). Waybar renders text and tooltip as Pango markup,
///   so both are escaped.
/// - `polybar`: a `custom/script` module (`tail = true` with `--watch`); one label per
///   line, coloured with `%{F#rrggbb}…%{F-}`; `%` in dynamic text is doubled.
/// - `i3blocks`: one run prints the raw format, three lines (`full_text`, `short_text`,
///   `color`), for `interval=N` blocks. A `--watch` update is one JSON object
///   with the same keys, for `interval=persist` with `format=json`: in raw format a
///   persistent block would take each line as a new `full_text` and lose the colour.
///   No markup (i3blocks' default `markup=none`).
/// - `genmon`: xfce4-genmon-plugin runs the command every period and reads
///   `<txt>…</txt><tool>…</tool><txtclick>…</txtclick>` from all of its output; text and
///   tooltip are Pango markup. Printed on one line; tooltip lines are joined with the
///   markup character reference `&#10;`. genmon does not stream, so it uses one-shot runs.
public enum StatusFormat: String, Sendable, CaseIterable {
    case text
    case json
    case waybar
    case polybar
    case i3blocks
    case genmon

    /// What one `gate status` run prints (without the final newline).
    public func render(_ record: StatusRecord, clock: StatusClock = .utc) -> String {
        let view = StatusView(record: record, clock: clock)
        switch self {
        case .text: return StatusView.oneLine(view.sentence)
        case .json: return record.json.serialized()
        case .waybar: return view.waybar
        case .polybar: return view.polybar
        case .i3blocks: return view.i3blocksRaw
        case .genmon: return view.genmon
        }
    }

    /// One `--watch` update: always a single line.
    public func renderUpdate(_ record: StatusRecord, clock: StatusClock = .utc) -> String {
        switch self {
        case .i3blocks: return StatusView(record: record, clock: clock).i3blocksJSON
        case .text, .json, .waybar, .polybar, .genmon: return render(record, clock: clock)
        }
    }
}

/// The four looks a panel distinguishes.
public enum StatusLook: String, Sendable, CaseIterable {
    /// Nothing running; the last opening, if any, finished (or its failure was reset).
    case ready
    /// `triggering` or `waiting_for_relay_close`: an opening is under way.
    case busy
    /// `timeout` or `error`, until `reset_at`.
    case failed
    /// Ready again, but the last opener died mid-cycle: nobody knows what the relay did.
    case interrupted

    public init(_ record: StatusRecord) {
        switch record.state {
        case .triggering, .waitingForRelayClose: self = .busy
        case .timeout, .error: self = .failed
        case .ready: self = record.last?.outcome == .interrupted ? .interrupted : .ready
        }
    }

    /// Readable on dark and light panels alike.
    public var color: String {
        switch self {
        case .ready: return "#55aa55"
        case .busy: return "#3584e4"
        case .failed: return "#e01b24"
        case .interrupted: return "#ff8c00"
        }
    }
}

/// Turns the status file's UTC timestamps into the time of day people read.
public struct StatusClock: Sendable {
    /// Seconds east of UTC at a Unix time in seconds (a function: daylight saving moves it).
    public var utcOffset: @Sendable (Int64) -> Int

    public init(utcOffset: @escaping @Sendable (Int64) -> Int) {
        self.utcOffset = utcOffset
    }

    public static let utc = StatusClock { _ in 0 }

    /// `10:00:01` for `2026-11-21T10:00:01.123Z` in UTC; the text itself if it does not parse.
    public func timeOfDay(_ timestamp: String) -> String {
        guard let millis = Self.epochMilliseconds(timestamp) else { return timestamp }
        let seconds = millis / 1000
        let local = seconds + Int64(utcOffset(seconds))
        let day = ((local % 86_400) + 86_400) % 86_400
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(two(day / 3600)):\(two(day / 60 % 60)):\(two(day % 60))"
    }

    /// Milliseconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS[.mmm]Z`, the only form
    /// `gate` writes; `nil` for anything else.
    public static func epochMilliseconds(_ timestamp: String) -> Int64? {
        let bytes = Array(timestamp.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                let digit = Int64(bytes[index]) - 48
                guard digit >= 0 && digit <= 9 else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var millis: Int64 = 0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count <= 30, let fraction = number(20..<(bytes.count - 1)) else { return nil }
            let digits = bytes.count - 21
            millis = digits >= 3 ? fraction / power(10, digits - 3) : fraction * power(10, 3 - digits)
        } else if bytes[19] != UInt8(ascii: "Z") {
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    }

    private static func power(_ base: Int64, _ exponent: Int) -> Int64 {
        (0..<exponent).reduce(1) { value, _ in value * base }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
