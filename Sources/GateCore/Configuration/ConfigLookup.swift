/// What looking up one key found: the distinction between absent (take the
/// default) and invalid (already reported) keeps one mistake from causing a
/// second, misleading problem.
enum ConfigLookup<Value> {
    case absent
    case invalid
    case found(Value, line: Int)

    var value: Value? {
        if case .found(let value, _) = self { value } else { nil }
    }

    var isInvalid: Bool {
        if case .invalid = self { true } else { false }
    }

    func or(_ fallback: Value) -> Value {
        value ?? fallback
    }

    func map<Other>(_ transform: (Value) -> Other) -> ConfigLookup<Other> {
        switch self {
        case .absent: .absent
        case .invalid: .invalid
        case .found(let value, let line): .found(transform(value), line: line)
        }
    }
}
