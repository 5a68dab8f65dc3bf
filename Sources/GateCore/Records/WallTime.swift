/// The wall-clock timestamps of the shared files (docs/CONTRACT.md#runtime-files), `2026-11-21T10:00:00.123Z`,
/// read back without trusting them: a time that is not a real date, or that does not
/// fit in `Int64` nanoseconds since the epoch (1970 to 2262), is invalid, never a crash.
public enum WallTime {
    /// The earliest and latest years a timestamp may name: nanoseconds since 1970 in
    /// an `Int64` end on 2262-04-11.
    public static let years: ClosedRange<Int64> = 1970...2261

    /// Nanoseconds since the Unix epoch of exactly `YYYY-MM-DDTHH:MM:SS.mmmZ` (what
    /// gate writes); `nil` for any other form, a date that does not exist (Feb 30),
    /// or a year outside `years`.
    public static func nanoseconds(fromISO8601 text: String) -> Int64? {
        var bytes = text.utf8.makeIterator()
        var digits: [Int64] = []
        digits.reserveCapacity(17)
        var position = 0
        while let byte = bytes.next() {
            defer { position += 1 }
            switch position {
            case 4, 7: guard byte == UInt8(ascii: "-") else { return nil }
            case 10: guard byte == UInt8(ascii: "T") else { return nil }
            case 13, 16: guard byte == UInt8(ascii: ":") else { return nil }
            case 19: guard byte == UInt8(ascii: ".") else { return nil }
            case 23: guard byte == UInt8(ascii: "Z") else { return nil }
            case 24...: return nil
            default:
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                digits.append(Int64(byte - 0x30))
            }
        }
        guard position == 24 else { return nil }
        func number(_ range: Range<Int>) -> Int64 { digits[range].reduce(0) { $0 * 10 + $1 } }
        let year = number(0..<4)
        let month = number(4..<6)
        let day = number(6..<8)
        let hour = number(8..<10)
        let minute = number(10..<12)
        let second = number(12..<14)
        let millis = number(14..<17)
        guard years.contains(year), (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return nil }
        let (total, overflow2) = whole.addingReportingOverflow(millis * 1_000_000)
        return overflow2 ? nil : total
    }

    /// Whether `text` is a timestamp as gate writes them (see `nanoseconds(fromISO8601:)`).
    public static func isValid(_ text: String) -> Bool {
        nanoseconds(fromISO8601: text) != nil
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
