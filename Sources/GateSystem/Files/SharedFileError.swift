import Plumbing

/// Why a file in a shared folder cannot be used, worded as a sentence that names it:
/// `cannot use /run/gate/status.json: it is a FIFO, not a regular file`.
public struct SharedFileError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Problem: Sendable, Hashable {
        /// Nothing by that name (only for files that are not created).
        case missing
        /// Something else than a regular file: "a FIFO", "a symbolic link", "a directory"…
        case notRegular(String)
        /// Something else than a folder where a folder should be.
        case notDirectory(String)
        /// A regular file with more than one name: writing it would write the other names too.
        case hardLinks(UInt)
        /// Larger than a reader accepts.
        case tooLarge(limit: Int)
        /// A system call failed.
        case system(SystemError)
    }

    public var path: String
    public var problem: Problem

    public init(path: String, problem: Problem) {
        self.path = path
        self.problem = problem
    }

    public var description: String { "cannot use \(path): \(reason)" }

    /// The problem alone: `it is a FIFO, not a regular file`.
    public var reason: String {
        switch problem {
        case .missing: return "it does not exist"
        case .notRegular(let kind): return "it is \(kind), not a regular file"
        case .notDirectory(let kind): return "it is \(kind), not a directory"
        case .hardLinks(let count): return "it has \(count) hard links (a shared file must have exactly one name)"
        case .tooLarge(let limit): return "it is larger than \(limit) bytes"
        case .system(let error): return error.description
        }
    }
}
