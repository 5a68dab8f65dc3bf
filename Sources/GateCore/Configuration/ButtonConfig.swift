/// The push button read by `gate daemon`.
public struct ButtonConfig: Sendable, Equatable {
    public static let defaultChip = "gpiochip0"
    public static let defaultDebounceMilliseconds = 50

    /// A chip name, number, path or label, as `gpiod_chip_open_lookup` takes it.
    public var chip: String
    public var line: Int
    public var activeLow: Bool
    public var debounceMilliseconds: Int

    public init(
        chip: String = ButtonConfig.defaultChip,
        line: Int,
        activeLow: Bool = true,
        debounceMilliseconds: Int = ButtonConfig.defaultDebounceMilliseconds
    ) {
        self.chip = chip
        self.line = line
        self.activeLow = activeLow
        self.debounceMilliseconds = debounceMilliseconds
    }
}
