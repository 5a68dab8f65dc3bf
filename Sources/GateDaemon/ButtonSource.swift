import GPIO

/// Where the button's edges come from, and how to open it again after a failure.
struct ButtonSource: Sendable {
    /// For logs: "gpiochip0 line 17", or the test FIFO.
    let origin: String
    let open: @Sendable () throws -> EdgeReader
}
