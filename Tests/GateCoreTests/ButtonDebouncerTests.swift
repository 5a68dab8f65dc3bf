import GateCore
import Testing

private let ms: UInt64 = 1_000_000
private let second: UInt64 = 1_000_000_000

/// The daemon's loop in miniature: one timer, fired at its deadline before any
/// later edge, then flushed up to `end`. Returns the presses' timestamps.
private func presses(
    _ edges: [ButtonDebouncer.Event],
    activeLow: Bool = true,
    debounceMs: UInt32 = 50,
    startNs: UInt64 = 0,
    until end: UInt64 = 100 * second
) -> [UInt64] {
    var debouncer = ButtonDebouncer(.init(activeLow: activeLow, debounceMs: debounceMs, startNs: startNs))
    var timer: UInt64?
    var pressed: [UInt64] = []
    func apply(_ event: ButtonDebouncer.Event) {
        for action in debouncer.handle(event) {
            switch action {
            case .press(let at): pressed.append(at)
            case .armTimer(let at): timer = at
            }
        }
    }
    func fireTimers(upTo now: UInt64) {
        while let due = timer, due <= now {
            timer = nil
            apply(.timerFired(at: due))
        }
    }
    for edge in edges {
        switch edge {
        case .rising(let at), .falling(let at), .timerFired(let at): fireTimers(upTo: at)
        }
        apply(edge)
    }
    fireTimers(upTo: end)
    return pressed
}

/// `count` edges `spacing` apart from `start`, alternating, falling first or rising first.
private func storm(from start: UInt64, count: Int, spacing: UInt64, firstFalling: Bool) -> [ButtonDebouncer.Event] {
    (0..<count).map { index in
        let at = start + UInt64(index) * spacing
        return (index % 2 == 0) == firstFalling ? .falling(at: at) : .rising(at: at)
    }
}

@Suite("Button debouncer")
struct ButtonDebouncerTests {
    @Test("one clean press: reported on the falling edge, the release reports nothing")
    func singlePress() {
        var debouncer = ButtonDebouncer(.init(activeLow: true, debounceMs: 50, startNs: 0))
        #expect(
            debouncer.handle(.falling(at: 2 * second)) == [.press(at: 2 * second), .armTimer(at: 2 * second + 50 * ms)]
        )
        #expect(debouncer.isPressed)
        #expect(debouncer.handle(.timerFired(at: 2 * second + 50 * ms)) == [])
        #expect(debouncer.timerDue == nil)
        #expect(debouncer.handle(.rising(at: 2 * second + 300 * ms)) == [.armTimer(at: 2 * second + 350 * ms)])
        #expect(!debouncer.isPressed)
        #expect(debouncer.handle(.timerFired(at: 2 * second + 350 * ms)) == [])
    }

    @Test(
        "20 edges within 30 ms give one press, whichever level the storm ends on",
        arguments: [true, false]
    )
    func bounceStorm(firstFalling: Bool) {
        // 20 edges 1.5 ms apart: 0 to 28.5 ms. Starting with a rising edge models
        // the kernel reading the level after the contact had already bounced back.
        let edges = storm(from: 2 * second, count: 20, spacing: 1_500_000, firstFalling: firstFalling)
        let result = presses(edges)
        #expect(result.count == 1)
        // Falling first: the press is the first edge. Rising first: the line was
        // already high, so the press is the first falling edge, 1.5 ms in.
        #expect(result == [firstFalling ? 2 * second : 2 * second + 1_500_000])
    }

    @Test("a storm that ends pressed, then a bouncing release: still one press")
    func stormThenHeldThenRelease() {
        let press = storm(from: 2 * second, count: 19, spacing: 1_500_000, firstFalling: true)
        let release = storm(from: 4 * second, count: 19, spacing: 1_500_000, firstFalling: false)
        #expect(presses(press + release) == [2 * second])
    }

    @Test("a release that bounces creates no press")
    func releaseBounce() {
        var debouncer = ButtonDebouncer(.init(activeLow: true, debounceMs: 50, startNs: 0))
        _ = debouncer.handle(.falling(at: 2 * second))
        _ = debouncer.handle(.timerFired(at: 2 * second + 50 * ms))
        let release: [ButtonDebouncer.Event] = [
            .rising(at: 3 * second), .falling(at: 3 * second + 2 * ms), .rising(at: 3 * second + 4 * ms),
            .falling(at: 3 * second + 7 * ms), .rising(at: 3 * second + 10 * ms),
        ]
        var actions: [ButtonDebouncer.Action] = []
        for event in release { actions += debouncer.handle(event) }
        actions += debouncer.handle(.timerFired(at: 3 * second + 50 * ms))
        #expect(actions == [.armTimer(at: 3 * second + 50 * ms)])
        #expect(!debouncer.isPressed)
    }

    @Test("presses in the first 500 ms after start are ignored, a later one counts")
    func bootSettling() {
        let start = 10 * second
        let bootTap: [ButtonDebouncer.Event] = [.falling(at: start + 200 * ms), .rising(at: start + 300 * ms)]
        #expect(presses(bootTap + [.falling(at: start + 2 * second)], startNs: start) == [start + 2 * second])
        // Held through the end of settling, bouncing across it: not a press; its
        // release resets, and the next press counts.
        let heldAtBoot = storm(from: start + 480 * ms, count: 9, spacing: 5 * ms, firstFalling: true)
        let later: [ButtonDebouncer.Event] = [.rising(at: start + 3 * second), .falling(at: start + 5 * second)]
        #expect(presses(heldAtBoot + later, startNs: start) == [start + 5 * second])
    }

    @Test("two presses far apart are two presses")
    func twoPresses() {
        let early =
            storm(from: 2 * second, count: 5, spacing: 2 * ms, firstFalling: true)
            + storm(from: 2 * second + 400 * ms, count: 5, spacing: 2 * ms, firstFalling: false)
        let late =
            storm(from: 8 * second, count: 5, spacing: 2 * ms, firstFalling: true)
            + storm(from: 8 * second + 400 * ms, count: 5, spacing: 2 * ms, firstFalling: false)
        #expect(presses(early + late) == [2 * second, 8 * second])
    }

    @Test("active high: the rising edge is the press")
    func activeHigh() {
        let edges: [ButtonDebouncer.Event] = [
            .rising(at: 2 * second), .falling(at: 2 * second + 3 * ms), .rising(at: 2 * second + 6 * ms),
            .falling(at: 2 * second + 500 * ms),
            .rising(at: 6 * second),
        ]
        #expect(presses(edges, activeLow: false) == [2 * second, 6 * second])
    }

    @Test("a tap shorter than the lockout, then a press delivered before the late timer: both count")
    func lateTimer() {
        var debouncer = ButtonDebouncer(.init(activeLow: true, debounceMs: 50, startNs: 0))
        #expect(
            debouncer.handle(.falling(at: 2 * second)) == [.press(at: 2 * second), .armTimer(at: 2 * second + 50 * ms)]
        )
        #expect(debouncer.handle(.rising(at: 2 * second + 30 * ms)) == [])
        // The timer due at +50 ms has not been delivered: the edge catches up on it
        // (the release is accepted at +50 ms), so this press is a new one.
        #expect(
            debouncer.handle(.falling(at: 2 * second + 200 * ms))
                == [.press(at: 2 * second + 200 * ms), .armTimer(at: 2 * second + 250 * ms)]
        )
    }
}
