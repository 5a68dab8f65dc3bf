import ArgumentParser
import CGateProtocol
import Glibc
import Plumbing

/// A protocol 2 key given to the simulator, as the firmware is given one (NVS `key1`…
/// `key255`, or menuconfig): 64 hex digits, read by the C core's `gate_key_parse` (either
/// case, one trailing newline tolerated). Never from an argument: argv is readable by
/// every user in /proc.
struct ProvisionedKey: Sendable {
    /// `ESP32_SIM_KEY1` … `ESP32_SIM_KEY255`.
    static let variablePrefix = "ESP32_SIM_KEY"
    /// More than a key file holds: its 64 digits and a newline.
    static let maximumFileSize = 256

    let id: UInt8
    let bytes: [UInt8]
    /// Where it came from, for log lines and errors: `file keys/pi.key`, `$ESP32_SIM_KEY1`.
    let origin: String

    /// Reads the key text; fails with a sentence naming the key (never its digits).
    init(id: UInt8, text: [UInt8], origin: String) throws(ProvisioningError) {
        var key = [UInt8](repeating: 0, count: Int(GATE_KEY_SIZE))
        let parsed = text.withUnsafeBytes { raw in
            key.withUnsafeMutableBufferPointer { out in
                gate_key_parse(raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count, out.baseAddress)
            }
        }
        guard parsed else {
            throw ProvisioningError(
                "key \(id) (\(origin)) is not 64 hex digits (one trailing newline allowed); "
                    + "write it as `gate key new` prints it"
            )
        }
        self.id = id
        self.bytes = key
        self.origin = origin
    }

    /// Every `ESP32_SIM_KEY<ID>` set in the environment.
    static func fromEnvironment() throws(ProvisioningError) -> [ProvisionedKey] {
        var keys: [ProvisionedKey] = []
        for id in UInt8(1)...UInt8(255) {
            let name = "\(variablePrefix)\(id)"
            guard let value = getenv(name) else { continue }
            let text = Array(UnsafeRawBufferPointer(start: value, count: strlen(value)))
            keys.append(try ProvisionedKey(id: id, text: text, origin: "$\(name)"))
        }
        return keys
    }

    /// The names of the `ESP32_SIM_KEY<ID>` variables that are set.
    static func variablesSet() -> [String] {
        (1...255).map { "\(variablePrefix)\($0)" }.filter { getenv($0) != nil }
    }

    /// The key in a `--key-file` file.
    static func fromFile(_ setting: KeyFileSetting) throws(ProvisioningError) -> ProvisionedKey {
        let path = setting.path
        guard let file = fopen(path, "re") else {
            throw ProvisioningError("cannot read key \(setting.id): \(SystemError("open \(path)"))")
        }
        defer { fclose(file) }
        var buffer = [UInt8](repeating: 0, count: maximumFileSize + 1)
        let count = fread(&buffer, 1, buffer.count, file)
        guard ferror(file) == 0 else {
            throw ProvisioningError("cannot read key \(setting.id): \(SystemError("read \(path)"))")
        }
        return try ProvisionedKey(id: setting.id, text: Array(buffer[..<count]), origin: "file \(path)")
    }
}

/// Why the keys could not be provisioned, as a sentence for the user.
struct ProvisioningError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One `--key-file ID=PATH`.
struct KeyFileSetting: Sendable, ExpressibleByArgument {
    let id: UInt8
    let path: String

    init?(argument: String) {
        guard let equals = argument.firstIndex(of: "="),
            let id = UInt8(argument[..<equals]), id >= 1
        else { return nil }
        let path = String(argument[argument.index(after: equals)...])
        guard !path.isEmpty else { return nil }
        self.id = id
        self.path = path
    }
}
