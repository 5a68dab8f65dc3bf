import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Why no counter can be drawn, as a sentence naming the file and what to do.
public struct CounterStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Problem: Sendable, Equatable {
        /// It cannot be read or written (a link, a FIFO, a folder, a system call failed).
        case unusable(String)
        /// It holds something other than a mark.
        case notAMark
        /// It holds a lower mark than this process reserved: someone wrote it.
        case wentBack(from: UInt64, to: UInt64)
        /// No block fits above the mark.
        case exhausted(UInt64)
    }

    public var path: String
    public var problem: Problem

    public init(path: String, problem: Problem) {
        self.path = path
        self.problem = problem
    }

    public var description: String {
        let recover =
            "gate never starts the counters again by itself, since the ESP32 could take a repeated counter for "
            + "an opening it already confirmed; write a number above every counter used into it (digits and a "
            + "newline), or delete it and restart the ESP32, which forgets the counters"
        switch problem {
        case .unusable(let why):
            return "cannot use \(path), protocol v2's counters: \(why)"
        case .notAMark:
            return "cannot use \(path): it does not hold protocol v2's counter (decimal digits and a newline); "
                + recover
        case .wentBack(let from, let to):
            return "cannot use \(path): its counter went back from \(from) to \(to), so someone else wrote it; "
                + recover
        case .exhausted(let mark):
            return "cannot use \(path): its counter \(mark) leaves no room for more; delete it and restart the "
                + "ESP32, which forgets the counters"
        }
    }
}
