/// Turns the push button's raw edges into presses (docs/CONTRACT.md#gate-daemon, docs/CONTRACT.md#configuration).
///
/// Pure: edges (with the kernel's timestamp in nanoseconds) and timer expiries go
/// in, presses and timer requests come out. The caller owns the one timer: an
/// `.armTimer(at:)` replaces any earlier one, and a timer that fires late or
/// needlessly is harmless (every event first catches up on deadlines already past).
///
/// ## The rule: leading edge, then a lockout of `debounce_ms`
/// An edge to a new level is accepted at once; every edge in the next
/// `debounce_ms` is only noted. When the lockout ends (`.timerFired`), the level
/// the line is at by then is accepted if it differs (a release hidden in the
/// bounce, or a press that the bounce ended on), which starts a new lockout.
///
/// Why this rule and not "the level must stay for `debounce_ms`":
/// - latency: the press goes out on the first edge, not `debounce_ms` after the
///   last bounce; the benchmark allows 2 ms from edge to trigger datagram;
/// - any bounce storm gives exactly one press, whether its edge count leaves the
///   line pressed or (after an even number of edges within 30 ms) released, and
///   whether or not the kernel reported some edge twice in a row;
/// - the cost: no rejection of a lone noise spike. The internal pull-up, the
///   opening lock and the cooldown (docs/CONTRACT.md#cooldown) bound what a spike can do.
///
/// The debouncer sees physical levels (the line is not requested ACTIVE_LOW) and
/// maps them with `activeLow` itself, so a pipe of recorded kernel events and the
/// real line mean the same thing.
///
/// ## Boot settling
/// Edges in the first 500 ms after `startNs`, and the bounces that follow them
/// within `debounce_ms`, set the resting level silently: a button held or
/// chattering while the Pi boots is never a press. Its release resets as usual.
public struct ButtonDebouncer: Sendable, Hashable {
    public enum Event: Sendable, Hashable {
        /// The line went high; kernel timestamp (CLOCK_MONOTONIC) in nanoseconds.
        case rising(at: UInt64)
        /// The line went low.
        case falling(at: UInt64)
        /// The timer last asked for by `.armTimer` expired; `at` is its deadline or later.
        case timerFired(at: UInt64)
    }

    public enum Action: Sendable, Hashable {
        /// One real press, stamped with the edge (or lockout end) that made it.
        case press(at: UInt64)
        /// Deliver `.timerFired(at:)` at this instant; replaces any earlier timer.
        case armTimer(at: UInt64)
    }

    public struct Configuration: Sendable, Hashable {
        /// Inputs settle this long after start (docs/CONTRACT.md#gate-daemon: 500 ms).
        public static let settleNs: UInt64 = 500_000_000

        /// Pressed is the low level (button to ground with the pull-up).
        public var activeLow: Bool
        public var debounceNs: UInt64
        /// When the daemon started, on the clock of the edges' timestamps.
        public var startNs: UInt64

        public init(activeLow: Bool, debounceMs: UInt32, startNs: UInt64) {
            self.activeLow = activeLow
            self.debounceNs = UInt64(debounceMs) * 1_000_000
            self.startNs = startNs
        }
    }

    public let configuration: Configuration
    /// The level of the last edge seen, accepted or not.
    private var lineActive = false
    /// The accepted (debounced) level; a press is the step from false to true.
    public private(set) var isPressed = false
    /// Until then, edges only set the resting level (boot settling).
    private var quietUntil: UInt64
    /// Until then, edges are bounces: noted, not accepted.
    private var lockoutUntil: UInt64 = 0
    /// The deadline of the timer asked for; set exactly while a lockout runs.
    public private(set) var timerDue: UInt64?

    /// Before any edge the line is taken to rest at the released level, which
    /// the pull-up (or pull-down) guarantees for an untouched button.
    public init(_ configuration: Configuration) {
        self.configuration = configuration
        self.quietUntil = configuration.startNs + Configuration.settleNs
    }

    public mutating func handle(_ event: Event) -> [Action] {
        let timerBefore = timerDue
        var actions: [Action] = []
        switch event {
        case .rising(let at):
            catchUp(to: at, &actions)
            edge(toActive: !configuration.activeLow, at: at, &actions)
        case .falling(let at):
            catchUp(to: at, &actions)
            edge(toActive: configuration.activeLow, at: at, &actions)
        case .timerFired(let at):
            catchUp(to: at, &actions)
        }
        // One request per call, for the latest deadline: the caller keeps one timer.
        if let due = timerDue, due != timerBefore { actions.append(.armTimer(at: due)) }
        return actions
    }

    /// Ends every lockout whose deadline is past, as if its timer had fired on
    /// time: an edge may be delivered before a timer due earlier.
    private mutating func catchUp(to now: UInt64, _ actions: inout [Action]) {
        while let due = timerDue, due <= now {
            timerDue = nil
            if lineActive != isPressed { accept(active: lineActive, at: due, &actions) }
        }
    }

    private mutating func edge(toActive active: Bool, at now: UInt64, _ actions: inout [Action]) {
        lineActive = active
        if now < quietUntil {
            isPressed = active
            quietUntil = max(quietUntil, now + configuration.debounceNs)
        } else if now < lockoutUntil {
            // A bounce: the lockout's timer, already armed, settles the final level.
        } else if active != isPressed {
            accept(active: active, at: now, &actions)
        }
        // Otherwise the same level again (an edge the kernel reported twice): nothing.
    }

    private mutating func accept(active: Bool, at now: UInt64, _ actions: inout [Action]) {
        isPressed = active
        lockoutUntil = now + configuration.debounceNs
        timerDue = lockoutUntil
        if active { actions.append(.press(at: now)) }
    }
}
