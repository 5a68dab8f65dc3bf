extension StatusClock {
    /// `2026-11-27 10:15:02 +01:00` for `2026-11-27T09:15:02.123Z` in a zone one hour
    /// east of UTC: the date and time a person reads on their clock, with the offset
    /// that says which clock; the text itself if it does not parse.
    public func dateTime(_ timestamp: String) -> String {
        guard let millis = Self.epochMilliseconds(timestamp) else { return timestamp }
        let seconds = millis.dividedRoundingDown(by: 1000)
        let offset = Int64(utcOffset(seconds))
        let local = seconds + offset
        let days = local.dividedRoundingDown(by: 86_400)
        let time = local - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let sign = offset < 0 ? "-" : "+"
        let minutes = abs(offset) / 60
        return "\(year)-\(two(month))-\(two(day)) \(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60))"
            + " \(sign)\(two(minutes / 60)):\(two(minutes % 60))"
    }

    /// Year, month and day of a day count since 1970-01-01, proleptic Gregorian
    /// (H. Hinnant's algorithm, the inverse of `WallTime`'s).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}

extension Int64 {
    /// Floor division: a time before 1970 still falls on the day it belongs to.
    fileprivate func dividedRoundingDown(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
