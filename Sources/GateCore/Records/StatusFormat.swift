/// How `gate status` prints a record: for people, for scripts, and for the
/// desktop panels that show the gate (docs/CONTRACT.md#gate-status).
///
/// `render` gives what one run prints; `renderUpdate` gives one `--watch` update.
/// Every update is a single line, because each panel below reads a stream line by
/// line. Per format, what the panel expects:
///
/// - `text`: one sentence, e.g. `ready (last: success via udp, 412 ms, 10:00:01)`.
/// - `json`: the effective record as in `status.json` (docs/CONTRACT.md#the-status-file), one line.
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
