#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

public enum FileStatus {
    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }
}
