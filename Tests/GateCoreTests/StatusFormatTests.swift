import Foundation
import Testing

@testable import GateCore

/// The records a panel has to tell apart: ready, busy, failed, last interrupted.
private enum Sample {
    static let success = StatusRecord.Last(
        outcome: .success,
        error: nil,
        adapter: "udp",
        durationMs: 412,
        finishedAt: "2026-11-21T10:00:01.250Z",
        source: "cli"
    )
    static let ready = StatusRecord(
        state: .ready,
        since: "2026-11-21T10:00:01.250Z",
        source: "cli",
        pid: 7,
        adapter: "udp",
        resetAt: nil,
        last: success
    )
    static let busy = StatusRecord(
        state: .waitingForRelayClose,
        since: "2026-11-21T10:00:00.800Z",
        source: "widget",
        pid: 7,
        adapter: "udp",
        resetAt: nil,
        last: success
    )
    static let failed = StatusRecord(
        state: .error,
        since: "2026-11-21T10:00:02.000Z",
        source: "cli",
        pid: 7,
        adapter: nil,
        resetAt: "2026-11-21T10:00:05.000Z",
        last: .init(
            outcome: .error,
            error: "allAdaptersFailed",
            adapter: nil,
            durationMs: 2001,
            finishedAt: "2026-11-21T10:00:02.000Z",
            source: "cli"
        )
    )
    static let interrupted = StatusRecord(
        state: .ready,
        since: "2026-11-21T10:00:00.500Z",
        source: "button",
        pid: nil,
        adapter: nil,
        resetAt: nil,
        last: .init(
            outcome: .interrupted,
            error: nil,
            adapter: "mqtt",
            durationMs: nil,
            finishedAt: "2026-11-21T10:00:00.500Z",
            source: "button"
        )
    )
    static let all = [ready, busy, failed, interrupted]

    /// A busy record whose names came from a hostile status file.
    static func hostile(_ adapter: String) -> StatusRecord {
        StatusRecord(
            state: .triggering,
            since: "2026-11-21T10:00:00.000Z",
            source: "a<b>&c",
            pid: 1,
            adapter: adapter,
            resetAt: nil,
            last: nil
        )
    }
}

private func object(_ line: String) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

@Suite("gate status formats")
struct StatusFormatTests {
    @Test("text: one sentence per state")
    func text() {
        #expect(StatusFormat.text.render(Sample.ready) == "ready (last: success via udp, 412 ms, 10:00:01)")
        #expect(StatusFormat.text.render(Sample.busy) == "opening: waiting for relay release (udp)")
        #expect(StatusFormat.text.render(Sample.failed) == "error until 10:00:05 (last: ESP32 not reached)")
        #expect(StatusFormat.text.render(Sample.interrupted) == "ready (last: interrupted)")
        #expect(StatusFormat.text.render(.initial(now: "2026-11-21T10:00:00.000Z")) == "ready")
        var triggering = Sample.busy
        triggering.state = .triggering
        #expect(StatusFormat.text.render(triggering) == "opening: waiting for relay activation (udp)")
    }

    @Test("text: times in the clock's time zone")
    func localTime() {
        let berlin = StatusClock { _ in 3600 }
        #expect(
            StatusFormat.text.render(Sample.failed, clock: berlin) == "error until 11:00:05 (last: ESP32 not reached)"
        )
        #expect(StatusClock.utc.timeOfDay("2026-11-21T23:59:59.999Z") == "23:59:59")
        #expect(StatusClock(utcOffset: { _ in 60 }).timeOfDay("2026-11-21T23:59:30.000Z") == "00:00:30")
        #expect(StatusClock.utc.timeOfDay("not a time") == "not a time")
    }

    @Test("Timestamps parse to Unix milliseconds")
    func epochMilliseconds() {
        #expect(StatusClock.epochMilliseconds("1970-01-01T00:00:00.000Z") == 0)
        #expect(StatusClock.epochMilliseconds("2026-11-21T10:00:01.250Z") == 1_795_255_201_250)
        #expect(StatusClock.epochMilliseconds("2000-02-29T12:00:00.000Z") == 951_825_600_000)
        #expect(StatusClock.epochMilliseconds("2000-02-29T12:00:00Z") == nil, "only the form gate writes")
        #expect(StatusClock.epochMilliseconds("2026-11-21 10:00:01Z") == nil)
        #expect(StatusClock.epochMilliseconds("2026-13-21T10:00:01.000Z") == nil)
    }

    @Test("json: the effective record as in status.json")
    func json() throws {
        for record in Sample.all {
            let line = StatusFormat.json.render(record)
            #expect(line == record.json.serialized())
            #expect(try object(line)["state"] as? String == record.state.rawValue)
        }
    }

    @Test(
        "waybar: valid JSON with text, tooltip, class and alt",
        arguments: [
            (Sample.ready, "ready", "ready"), (Sample.busy, "busy", "waiting_for_relay_close"),
            (Sample.failed, "failed", "error"), (Sample.interrupted, "interrupted", "ready"),
        ]
    )
    func waybar(record: StatusRecord, look: String, alt: String) throws {
        let line = StatusFormat.waybar.render(record)
        #expect(!line.contains("\n"))
        let fields = try object(line)
        #expect(Set(fields.keys) == ["text", "tooltip", "class", "alt"])
        #expect(fields["class"] as? String == look)
        #expect(fields["alt"] as? String == alt)
        #expect((fields["text"] as? String)?.hasPrefix("gate ") == true)
        #expect((fields["tooltip"] as? String)?.isEmpty == false)
    }

    @Test("Each look has its own colour, label and waybar class")
    func distinctLooks() throws {
        let looks = Sample.all.map(StatusLook.init)
        #expect(looks == [.ready, .busy, .failed, .interrupted])
        #expect(Set(looks.map(\.color)).count == 4)
        #expect(Set(Sample.all.map { StatusFormat.polybar.render($0) }).count == 4)
        #expect(Set(Sample.all.map { StatusFormat.i3blocks.render($0) }).count == 4)
        #expect(Set(Sample.all.map { StatusFormat.genmon.render($0) }).count == 4)
        #expect(StatusLook(Sample.failed).color == "#e01b24")
    }

    @Test("Pango markup is escaped in waybar and genmon")
    func pangoEscaping() throws {
        let record = Sample.hostile("<b>u&p</b>")
        let waybar = try object(StatusFormat.waybar.render(record))
        #expect(waybar["text"] as? String == "gate triggering (&lt;b&gt;u&amp;p&lt;/b&gt;)")
        let tooltip = try #require(waybar["tooltip"] as? String)
        #expect(tooltip.contains("a&lt;b&gt;&amp;c"))
        #expect(!tooltip.contains("<"))
        let genmon = StatusFormat.genmon.render(record)
        #expect(genmon.contains("gate triggering (&lt;b&gt;u&amp;p&lt;/b&gt;)</span></txt>"))
        #expect(!genmon.contains("<b>"))
    }

    @Test("polybar: coloured label, % doubled")
    func polybar() {
        #expect(StatusFormat.polybar.render(Sample.ready) == "%{F#55aa55}gate ready%{F-}")
        #expect(StatusFormat.polybar.render(Sample.busy) == "%{F#3584e4}gate relay on (udp)%{F-}")
        #expect(StatusFormat.polybar.render(Sample.failed) == "%{F#e01b24}gate error (ESP32 not reached)%{F-}")
        #expect(StatusFormat.polybar.render(Sample.interrupted) == "%{F#ff8c00}gate ready (interrupted)%{F-}")
        #expect(
            StatusFormat.polybar.render(Sample.hostile("%{F#000}x%"))
                == "%{F#3584e4}gate triggering (%%{F#000}x%%)%{F-}"
        )
    }

    @Test("i3blocks: three raw lines once, one JSON object per --watch update")
    func i3blocks() throws {
        #expect(StatusFormat.i3blocks.render(Sample.ready) == "gate ready\ngate ok\n#55aa55")
        #expect(StatusFormat.i3blocks.render(Sample.failed) == "gate error (ESP32 not reached)\ngate !\n#e01b24")
        for record in Sample.all {
            let line = StatusFormat.i3blocks.renderUpdate(record)
            #expect(!line.contains("\n"))
            let fields = try object(line)
            #expect(Set(fields.keys) == ["full_text", "short_text", "color"])
            #expect(fields["color"] as? String == StatusLook(record).color)
        }
    }

    @Test("genmon: txt, tool and txtclick on one line")
    func genmon() {
        let line = StatusFormat.genmon.render(Sample.busy)
        #expect(line.hasPrefix("<txt><span foreground=\"#3584e4\">gate relay on (udp)</span></txt><tool>"))
        #expect(line.hasSuffix("</tool><txtclick>gate open --source widget</txtclick>"))
        #expect(line.contains("Last: success via udp, 412 ms, 10:00:01 (cli)"))
        #expect(line.contains("&#10;"), "tooltip lines are joined by a character reference, not a newline")
        #expect(!line.contains("\n"))
    }

    @Test("Every --watch update is a single line, whatever the status file holds", arguments: StatusFormat.allCases)
    func singleLine(format: StatusFormat) {
        for record in Sample.all + [Sample.hostile("u\ndp\r")] {
            #expect(!format.renderUpdate(record).contains("\n"), "\(format)")
            #expect(!format.renderUpdate(record).contains("\r"), "\(format)")
        }
    }

    /// SafeText's rule, as everywhere else: a C1 control (U+009B, a one-character CSI) or a
    /// bidirectional override must not reach a bar or a terminal raw.
    @Test(
        "The line formats drop C1 and invisible characters as well as C0",
        arguments: [StatusFormat.text, .i3blocks, .polybar]
    )
    func invisibleCharactersDropped(format: StatusFormat) {
        let line = format.render(Sample.hostile("u\u{9B}d\u{202E}p\u{2028}%"))
        #expect(!line.unicodeScalars.contains { SafeText.isUnsafe($0) && $0 != "\n" }, "\(line.debugDescription)")
        #expect(line.contains("udp"), "\(line.debugDescription)")
    }
}
