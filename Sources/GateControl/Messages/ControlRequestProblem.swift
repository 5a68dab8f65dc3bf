import GateCore

/// Why a request line was refused.
public enum ControlRequestProblem: Error, Sendable, Hashable, CustomStringConvertible {
    case notJSON
    case tooLong(limit: Int)
    case field(String)
    case unknownRequest(String)
    /// The line did not come before the daemon stopped waiting for it.
    case incomplete

    /// The problem `JSONDecoder` found: the member at fault, or a line that is not a
    /// JSON object at all.
    init(_ error: DecodingError?) {
        let path: [any CodingKey]
        switch error {
        case .keyNotFound(let key, _)?: path = [key]
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?, .dataCorrupted(let context)?:
            path = context.codingPath
        case nil: path = []
        @unknown default: path = []
        }
        self = path.first.map { .field($0.stringValue) } ?? .notJSON
    }

    public var description: String {
        switch self {
        case .notJSON: return "the request is not one JSON object on one line"
        case .tooLong(let limit): return "the request is longer than \(limit) bytes"
        case .field(let key): return "the request's \(key) is missing or invalid"
        case .unknownRequest(let kind): return "unknown request \(kind) (known: open, who)"
        case .incomplete: return "the request did not end with a newline in time"
        }
    }
}
