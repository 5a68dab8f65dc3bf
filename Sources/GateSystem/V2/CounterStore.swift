import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Protocol v2's counters for one key id (PROTOCOL-V2.md, "The appliance's rules"): they
/// only increase, across restarts and crashes, and are never used twice, because the ESP32
/// repeats the answer of a counter it has seen (a counter used again could be "confirmed"
/// by the answer to its first use, a cycle that this opening never caused).
///
/// The state folder holds, per key id, `esp32-counter-<key_id>`: the high-water mark, the
/// last counter reserved, as decimal digits and a newline. Counters are reserved a block at
/// a time: the new mark is written and made durable (temporary file, fsync, rename, fsync
/// of the folder) *before* any counter of the block is handed out, so a crash at any point
/// loses at most the rest of a block, never repeats one. Every draw happens under the
/// opening lock and re-reads the mark: a block is used only while the mark is still the
/// one this store wrote, so two processes with the same key (the daemon, a CLI) never
/// interleave counters. A file that is not a mark, or a mark that went down, is an error
/// naming the file, never a new start at 1 (docs/CONTRACT.md#protocol-v2s-counters).
public final class CounterStore {
    public static let defaultBlockSize: UInt64 = 64
    /// More than any mark's digits and newline.
    static let readLimit = 64

    public let path: String
    let folder: String
    let blockSize: UInt64
    /// The mark this store last wrote, and the last counter of its block handed out.
    private var reserved: UInt64?
    private var used: UInt64 = 0

    public init(stateDirectory: String, keyID: UInt8, blockSize: UInt64 = CounterStore.defaultBlockSize) {
        folder = stateDirectory
        path = stateDirectory + "/" + Self.fileName(keyID: keyID)
        self.blockSize = max(1, blockSize)
    }

    public static func fileName(keyID: UInt8) -> String { "esp32-counter-\(keyID)" }

    /// The next counter for an open. `lock` is the opening lock, held for the whole
    /// opening: taking it is what orders the draws of every process.
    public func next(holding lock: OpeningLock) throws(CounterStoreError) -> UInt64 {
        let mark = try readMark()
        if let reserved, mark == reserved, used < reserved {
            used += 1
            return used
        }
        if let reserved, mark < reserved {
            throw CounterStoreError(
                path: path,
                problem: .wentBack(from: reserved, to: mark)
            )
        }
        let (end, overflow) = mark.addingReportingOverflow(blockSize)
        guard !overflow else { throw CounterStoreError(path: path, problem: .exhausted(mark)) }
        try writeMark(end)
        reserved = end
        used = mark + 1
        return used
    }

    /// The mark in the file; 0 when there is no file yet (no counter was ever reserved).
    func readMark() throws(CounterStoreError) -> UInt64 {
        let bytes: [UInt8]
        do {
            bytes = try SharedFile.read(path, limit: Self.readLimit)
        } catch {
            if error.problem == .missing { return 0 }
            throw CounterStoreError(path: path, problem: .unusable(error.reason))
        }
        guard let mark = Self.mark(in: bytes) else { throw CounterStoreError(path: path, problem: .notAMark) }
        return mark
    }

    /// `digits "\n"`: no sign, no space, no leading zero, at most UInt64.max.
    static func mark(in bytes: [UInt8]) -> UInt64? {
        guard bytes.count >= 2, bytes.last == 0x0a else { return nil }
        let digits = bytes.dropLast()
        guard digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.first != 0x30 || digits.count == 1 else {
            return nil
        }
        return UInt64(String(decoding: digits, as: UTF8.self))
    }

    /// Replaces the file with `mark` and makes the replacement durable before returning.
    private func writeMark(_ mark: UInt64) throws(CounterStoreError) {
        let bytes = Array("\(mark)\n".utf8)
        // 0660: the daemon and the group's CLI users draw from the same file.
        if let failure = SharedFile.replace(path, with: bytes, mode: 0o660) {
            throw CounterStoreError(path: path, problem: .unusable(failure.reason))
        }
        // The rename is durable only once the folder's entry is.
        let directory: Int32
        switch SharedFile.openDirectory(folder) {
        case .success(let opened): directory = opened
        case .failure(let failure): throw CounterStoreError(path: path, problem: .unusable(failure.description))
        }
        defer { close(directory) }
        if fsync(directory) != 0 {
            throw CounterStoreError(path: path, problem: .unusable(SystemError("fsync \(folder)").description))
        }
    }
}
