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

    /// Milliseconds since the Unix epoch of a timestamp as gate writes them
    /// (`WallTime`: the one reader of the shared files' times); `nil` for anything else.
    public static func epochMilliseconds(_ timestamp: String) -> Int64? {
        WallTime.nanoseconds(fromISO8601: timestamp).map { $0 / 1_000_000 }
    }
}
