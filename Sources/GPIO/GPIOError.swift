import Plumbing

/// A GPIO step that failed, worded as a sentence with the failing call last:
/// `cannot open GPIO chip gpiochip0: gpiod_chip_open_lookup: No such file or directory`.
public struct GPIOError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was being done, as the start of the sentence.
    public var context: String
    /// The C call that failed (`gpiod_chip_open_lookup`, `poll`).
    public var call: String
    /// The errno it left, or -1 when the failure is not an errno (`words` then says why).
    public var code: Int32
    public var words: String

    /// Pass `errno` read right after the call: anything in between may change it.
    public init(_ context: String, call: String, code: Int32) {
        self.init(context, call: call, words: SystemError.text(for: code))
        self.code = code
    }

    /// A failure that has no errno (`poll` reported the fd itself as bad).
    public init(_ context: String, call: String, words: String) {
        self.context = context
        self.call = call
        self.code = -1
        self.words = words
    }

    public var description: String { "\(context): \(call): \(words)" }
}
