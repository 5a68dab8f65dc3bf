import FoundationEssentials

/// A record gate reads back from JSON that it, or another member of group `gate`,
/// wrote: the lock record, the status file, a history line.
///
/// Read by Foundation's `JSONDecoder`: RFC 8259 (it also takes a trailing comma, and
/// the first of a member written twice), members a record does not know are ignored,
/// and an integer member holds an exact integer of its type (`1.5` and `01` are no
/// record). Each record's `init(from:)` adds what the contract asks of a shared file.
public protocol JSONRecord: Decodable {}

extension JSONRecord {
    /// The record in `bytes`, or `nil` when they are not one JSON document that holds it.
    public init?(json bytes: some Collection<UInt8>) {
        guard let record = try? JSONDecoder().decode(Self.self, from: Data(bytes)) else { return nil }
        self = record
    }
}
