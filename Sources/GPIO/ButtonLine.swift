import CGPIOD

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Owns one GPIO chip handle and the button's line on it, requested for both
/// edges' events, and frees them.
///
/// The line is requested with the pull-up when `activeLow` (button to ground,
/// docs/CONTRACT.md#configuration) and the pull-down otherwise (button to 3.3 V), but never with
/// GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW: the events keep the physical levels, and
/// `ButtonDebouncer` maps them with `active_low` itself. That keeps one meaning
/// for a recorded pipe of events and the real line, and avoids how v1 kernels
/// differ in inverting event ids for active-low lines.
///
/// `@unchecked Sendable`: the chip and line pointers are only touched in
/// `open` and `deinit`; the event fd is a plain number, read by `EdgeReader`,
/// which keeps this object alive while its thread polls the fd.
public final class ButtonLine: @unchecked Sendable {
    public let chipName: String
    public let offset: UInt32
    public let activeLow: Bool
    /// Poll for POLLIN and read with `gpiod_line_event_read_fd` (see `EdgeReader`).
    /// Valid while this object lives.
    public let eventFD: Int32

    private let chip: OpaquePointer
    private let line: OpaquePointer

    /// Opens `chip` (a name, number, path or label: `gpiod_chip_open_lookup`, since
    /// the header's chip number differs between Pi models) and requests `line`
    /// for edge events under the consumer name `consumer`.
    public static func open(
        chip name: String,
        line offset: UInt32,
        activeLow: Bool,
        consumer: String = "gate"
    ) throws(GPIOError) -> ButtonLine {
        try ButtonLine(chip: name, line: offset, activeLow: activeLow, consumer: consumer)
    }

    private init(chip name: String, line offset: UInt32, activeLow: Bool, consumer: String) throws(GPIOError) {
        guard let chip = gpiod_chip_open_lookup(name) else {
            throw GPIOError("cannot open GPIO chip \(name)", call: "gpiod_chip_open_lookup", code: errno)
        }
        /// The failure of `call`, with what was opened so far freed.
        func failure(_ context: String, _ call: String, releasing line: OpaquePointer? = nil) -> GPIOError {
            let error = GPIOError(context, call: call, code: errno)
            if let line { gpiod_line_release(line) }
            gpiod_chip_close(chip)
            return error
        }
        guard let line = gpiod_chip_get_line(chip, offset) else {
            throw failure("cannot find line \(offset) on GPIO chip \(name)", "gpiod_chip_get_line")
        }
        let bias = activeLow ? gate_gpiod_flag_bias_pull_up() : gate_gpiod_flag_bias_pull_down()
        guard gpiod_line_request_both_edges_events_flags(line, consumer, bias) == 0 else {
            throw failure(
                "cannot request line \(offset) of GPIO chip \(name) for edge events",
                "gpiod_line_request_both_edges_events_flags"
            )
        }
        let fd = gpiod_line_event_get_fd(line)
        guard fd >= 0 else {
            throw failure(
                "cannot get the event fd of line \(offset) of GPIO chip \(name)",
                "gpiod_line_event_get_fd",
                releasing: line
            )
        }
        self.chipName = name
        self.offset = offset
        self.activeLow = activeLow
        self.eventFD = fd
        self.chip = chip
        self.line = line
    }

    deinit {
        // Releasing the line closes its event fd; closing the chip frees the line object.
        gpiod_line_release(line)
        gpiod_chip_close(chip)
    }
}
