import Plumbing

#if canImport(Glibc)
import Glibc
#endif

/// Bytes from the kernel's random generator (`getrandom(2)`, which blocks only until it
/// is seeded at boot): keys are drawn here, never with a user-space generator.
public enum SystemRandom {
    private typealias GetRandom = @convention(c) (UnsafeMutableRawPointer?, Int, UInt32) -> Int

    /// glibc's `getrandom` (2.25 and later), which Swift's Glibc module does not declare.
    private static let getrandom: GetRandom? = dlsym(nil, "getrandom").map { unsafeBitCast($0, to: GetRandom.self) }

    public static func bytes(_ count: Int) -> Result<[UInt8], SystemError> {
        guard let getrandom else { return .failure(SystemError("getrandom", code: ENOSYS)) }
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { raw in
                getrandom(raw.baseAddress! + filled, count - filled, 0)
            }
            if got < 0 {
                if errno == EINTR { continue }
                return .failure(SystemError("getrandom"))
            }
            filled += got
        }
        return .success(bytes)
    }

    /// A random 64-bit number that is not 0.
    public static func nonZero64() -> Result<UInt64, SystemError> {
        while true {
            switch bytes(8) {
            case .failure(let error): return .failure(error)
            case .success(let bytes):
                let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                if value != 0 { return .success(value) }
            }
        }
    }
}
