/// A value as written in the file; the type is kept so that validation can
/// say "expected an integer, got a string" instead of guessing.
public enum TOMLValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case float(Double)
    case boolean(Bool)

    /// "a string", "an integer": the words a problem message uses for the type.
    public var typeDescription: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .float: "a float"
        case .boolean: "a boolean"
        }
    }
}
