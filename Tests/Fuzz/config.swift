// libFuzzer target: the configuration parser and validator (see README.md).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: count), as: UTF8.self)
    guard let config = try? GateConfig.parse(toml: text, file: "fuzz.toml") else { return 0 }
    let rendered = config.renderedTOML(source: "fuzz.toml")
    let again: GateConfig
    do {
        again = try GateConfig.parse(toml: rendered, file: "rendered.toml")
    } catch {
        fatalError("a valid configuration rendered to a file that does not parse: \(error)\n\(rendered)")
    }
    guard again == config else {
        fatalError("rendering changed the configuration:\n\(text)\n---\n\(rendered)")
    }
    guard again.changes(from: config).isEmpty else {
        fatalError("equal configurations report changes")
    }
    return 0
}
