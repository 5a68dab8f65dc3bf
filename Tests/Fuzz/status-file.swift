// libFuzzer target: the JSON reader, the status-file record and the panel formats (see README.md).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStatusFile(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    guard let value = JSONValue.parse(bytes) else { return 0 }
    // Whatever the reader accepts, the writer writes back into the same value.
    guard let reread = JSONValue.parse(Array(value.serialized().utf8)) else {
        fatalError("a value that was read does not read back: \(value.serialized())")
    }
    guard reread.serialized() == value.serialized() else { fatalError("a value changed on a round trip: \(value.serialized())") }
    guard let record = StatusRecord(json: value) else { return 0 }
    guard let again = JSONValue.parse(Array(record.json.serialized().utf8)).flatMap(StatusRecord.init(json:)) else {
        fatalError("a record that was read back does not decode: \(record.json.serialized())")
    }
    guard again == record else { fatalError("the status file changed on a round trip: \(record) vs \(again)") }
    for now in ["2026-01-01T00:00:00.000Z", "2099-12-31T23:59:59.999Z"] {
        for held in [false, true] {
            let shown = record.effective(now: now, lockHeld: held)
            if shown.effective(now: now, lockHeld: held) != shown { fatalError("effective is not idempotent") }
            for format in StatusFormat.allCases {
                _ = format.render(shown)
                _ = format.renderUpdate(shown)
            }
        }
    }
    return 0
}
