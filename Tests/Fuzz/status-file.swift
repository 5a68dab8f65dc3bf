// libFuzzer target: the writer, the status-file record and the panel formats (see README.md).

import FoundationEssentials

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStatusFile(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: count))
    // Whatever text a member holds, the writer writes JSON that reads back to it.
    let text = String(decoding: bytes, as: UTF8.self)
    let written = JSONValue.object([(text, .string(text))]).serialized()
    guard let read = try? JSONDecoder().decode([String: String].self, from: Data(written.utf8)), read == [text: text]
    else {
        fatalError("the writer's \(written.debugDescription) does not read back")
    }
    guard let record = StatusRecord(json: bytes) else { return 0 }
    // The file is shared (docs/CONTRACT.md#runtime-files): a record that was accepted holds only what gate writes.
    let texts = [record.source, record.adapter, record.last?.source, record.last?.error, record.last?.adapter]
        .compactMap { $0 }
    guard texts.allSatisfy(SafeText.isLabel), WallTime.isValid(record.since),
        record.resetAt.map(WallTime.isValid) ?? true,
        record.last.map({ WallTime.isValid($0.finishedAt) }) ?? true
    else {
        fatalError("a status record with hostile members was accepted: \(record)")
    }
    guard let again = StatusRecord(json: Array(record.json.serialized().utf8)) else {
        fatalError("a record that was read back does not decode: \(record.json.serialized())")
    }
    guard again == record else { fatalError("the status file changed on a round trip: \(record) vs \(again)") }
    for now in ["2026-01-01T00:00:00.000Z", "2099-12-31T23:59:59.999Z"] {
        for held in [false, true] {
            let shown = record.effective(now: now, lockHeld: held)
            if shown.effective(now: now, lockHeld: held) != shown { fatalError("effective is not idempotent") }
            for format in StatusFormat.allCases {
                // What a panel or a terminal shows: no control character but line ends.
                for text in [format.render(shown), format.renderUpdate(shown)]
                where text.unicodeScalars.contains(where: { $0 != "\n" && SafeText.isUnsafe($0) }) {
                    fatalError("\(format) printed a control character: \(text.debugDescription)")
                }
            }
        }
    }
    return 0
}
