// libFuzzer target: the status-file reader and the panel formats (see README.md).
import FoundationEssentials

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStatusFile(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Data(UnsafeBufferPointer(start: data, count: count))
    guard let record = try? JSONDecoder().decode(StatusRecord.self, from: bytes) else { return 0 }
    let written = Data(record.json.serialized().utf8)
    guard let again = try? JSONDecoder().decode(StatusRecord.self, from: written) else {
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
