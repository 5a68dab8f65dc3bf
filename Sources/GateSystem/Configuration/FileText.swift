import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Small whole-file reads, bounded so that a wrong path (a device, a huge log)
/// cannot make `gate` read forever.
public enum FileText {
    public static func read(_ path: String, limit: Int) -> Result<String, SystemError> {
        switch FileBytes.read(path, limit: limit) {
        case .failure(let error):
            return .failure(error)
        case .success(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .failure(SystemError("read", code: EILSEQ))
            }
            return .success(text)
        }
    }
}
