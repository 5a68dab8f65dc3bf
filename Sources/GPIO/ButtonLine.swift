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

    private init(
        chipName: String,
        offset: UInt32,
        activeLow: Bool,
        eventFD: Int32,
        chip: OpaquePointer,
        line: OpaquePointer
    ) {
        self.chipName = chipName
        self.offset = offset
        self.activeLow = activeLow
        self.eventFD = eventFD
        self.chip = chip
        self.line = line
    }

    /// Opens `chip` (a name, number, path or label: `gpiod_chip_open_lookup`, since
    /// the header's chip number differs between Pi models) and requests `line`
    /// for edge events under the consumer name `consumer`.
    public static func open(
        chip name: String,
        line offset: UInt32,
        activeLow: Bool,
        consumer: String = "gate"
    ) throws(GPIOError) -> ButtonLine {
        guard let chip = gpiod_chip_open_lookup(name) else {
            throw GPIOError("cannot open GPIO chip \(name)", call: "gpiod_chip_open_lookup", code: errno)
        }
        guard let line = gpiod_chip_get_line(chip, offset) else {
            let code = errno
            gpiod_chip_close(chip)
            throw GPIOError("cannot find line \(offset) on GPIO chip \(name)", call: "gpiod_chip_get_line", code: code)
        }
        let bias = activeLow ? gate_gpiod_flag_bias_pull_up() : gate_gpiod_flag_bias_pull_down()
        guard gpiod_line_request_both_edges_events_flags(line, consumer, bias) == 0 else {
            let code = errno
            gpiod_chip_close(chip)
            throw GPIOError(
                "cannot request line \(offset) of GPIO chip \(name) for edge events",
                call: "gpiod_line_request_both_edges_events_flags",
                code: code
            )
        }
        let fd = gpiod_line_event_get_fd(line)
        guard fd >= 0 else {
            let code = errno
            gpiod_line_release(line)
            gpiod_chip_close(chip)
            throw GPIOError(
                "cannot get the event fd of line \(offset) of GPIO chip \(name)",
                call: "gpiod_line_event_get_fd",
                code: code
            )
        }
        return ButtonLine(
            chipName: name,
            offset: offset,
            activeLow: activeLow,
            eventFD: fd,
            chip: chip,
            line: line
        )
    }

    deinit {
        // Releasing the line closes its event fd; closing the chip frees the line object.
        gpiod_line_release(line)
        gpiod_chip_close(chip)
    }
}
