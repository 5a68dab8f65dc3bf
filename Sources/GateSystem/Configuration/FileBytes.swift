import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

public enum FileBytes {
    public static func read(_ path: String, limit: Int) -> Result<[UInt8], SystemError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(SystemError("open")) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            return .failure(SystemError("read", code: EISDIR))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = retryingOnInterrupt { Glibc.read(fd, &chunk, chunk.count) }
            if count < 0 {
                return .failure(SystemError("read"))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit { return .failure(SystemError("read", code: EFBIG)) }
        }
        return .success(bytes)
    }
}
