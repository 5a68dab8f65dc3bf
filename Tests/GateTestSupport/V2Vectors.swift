import Foundation

/// Protocol v2's one vectors file (`Sources/CGateProtocol/vectors/v2-vectors.txt`, its
/// format described at its top), as the Swift tests read it: the key materials and the
/// frames. The C tests read the same file, scenarios included.
public struct V2Vectors: Sendable {
    public struct Material: Sendable {
        public let name: String
        /// K, K_c2d, K_d2c as lowercase hex.
        public let key: String
        public let c2d: String
        public let d2c: String
    }

    public struct Frame: Sendable {
        public let name: String
        public let material: String
        /// Signed with d2c (a reply), else c2d (a request).
        public let signedAsReply: Bool
        public let version: UInt8
        public let type: UInt8
        public let keyID: UInt8
        public let gate: UInt8
        public let epoch: UInt32
        public let counter: UInt64
        public let hex: String
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static let path = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/CGateProtocol/vectors/v2-vectors.txt").path

    /// `key-text TEXT KEY|-`: a credential's bytes, and the key they read as (nil: refused).
    public struct KeyText: Sendable {
        public let text: [UInt8]
        public let key: String?
    }

    public let materials: [String: Material]
    public let frames: [Frame]
    public let keyTexts: [KeyText]

    public init(path: String = V2Vectors.path) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var materials: [String: Material] = [:]
        var frames: [Frame] = []
        var keyTexts: [KeyText] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ").map(String.init)
            switch fields.first {
            case "material":
                guard fields.count == 5 else { throw Failure(description: "bad material line: \(line)") }
                materials[fields[1]] = Material(name: fields[1], key: fields[2], c2d: fields[3], d2c: fields[4])
            case "frame":
                frames.append(try Self.frame(fields, line: String(line)))
            case "key-text":
                guard fields.count == 3, let text = fields[1] == "-" ? [] : bytesFromHex(fields[1]) else {
                    throw Failure(description: "bad key-text line: \(line)")
                }
                keyTexts.append(KeyText(text: text, key: fields[2] == "-" ? nil : fields[2]))
            default:
                continue
            }
        }
        guard !materials.isEmpty, !frames.isEmpty else {
            throw Failure(description: "\(path): no material or frame records")
        }
        self.materials = materials
        self.frames = frames
        self.keyTexts = keyTexts
    }

    /// `frame NAME material=M dir=c2d|d2c ver=V type=TT key=ID gate=G epoch=EEEEEEEE counter=N hex=…`
    private static func frame(_ fields: [String], line: String) throws -> Frame {
        var values: [String: String] = [:]
        for field in fields.dropFirst(2) {
            let parts = field.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw Failure(description: "bad field \(field) in: \(line)") }
            values[parts[0]] = parts[1]
        }
        guard fields.count >= 2, let material = values["material"], let direction = values["dir"],
            let version = values["ver"].flatMap({ UInt8($0) }),
            let type = values["type"].flatMap({ UInt8($0, radix: 16) }),
            let keyID = values["key"].flatMap({ UInt8($0) }),
            let gate = values["gate"].flatMap({ UInt8($0) }),
            let epoch = values["epoch"].flatMap({ UInt32($0, radix: 16) }),
            let counter = values["counter"].flatMap({ UInt64($0) }),
            let hex = values["hex"], direction == "c2d" || direction == "d2c"
        else { throw Failure(description: "bad frame line: \(line)") }
        return Frame(
            name: fields[1],
            material: material,
            signedAsReply: direction == "d2c",
            version: version,
            type: type,
            keyID: keyID,
            gate: gate,
            epoch: epoch,
            counter: counter,
            hex: hex
        )
    }

    public func frame(named name: String) throws -> Frame {
        guard let frame = frames.first(where: { $0.name == name }) else {
            throw Failure(description: "no frame \(name) in the vectors file")
        }
        return frame
    }

    /// Material `name`'s K as a key with id `id`.
    public func key(_ name: String, id: UInt8) throws -> V2TestKey {
        guard let material = materials[name], let key = V2TestKey(id: id, hex: material.key) else {
            throw Failure(description: "no usable material \(name) in the vectors file")
        }
        return key
    }
}
