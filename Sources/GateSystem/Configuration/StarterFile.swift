import GateCore
import Plumbing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `gate config init`'s file: where it goes, and writing it without ever replacing one.
public enum StarterFile {
    public enum Failure: Error, Sendable, Hashable {
        /// Something (a file, a link, a folder) is already at the path.
        case exists(path: String)
        /// The path or a folder above it cannot be made: the failing call.
        case cannotCreate(path: String, SystemError)
        /// No place of the search is writable for this account.
        case nowhere(searched: [String])
    }

    /// The first place of the configuration search this account can write, where
    /// `gate` would then find the file: `--config` or `$GATE_CONFIG` when given; for
    /// root the system file (the service reads it); otherwise the user's own file,
    /// else the system file when this account may write there.
    public static func target(
        _ locator: ConfigLocator,
        isRoot: Bool,
        writable: (String) -> Bool = StarterFile.isCreatable
    ) -> Result<ConfigLocator.Candidate, Failure> {
        let candidates = locator.candidates
        if let explicit = candidates.first(where: { $0.origin == .option || $0.origin == .environment }) {
            return .success(explicit)
        }
        let order = isRoot ? candidates.filter { $0.origin == .system } : candidates
        if let first = order.first(where: { writable($0.path) }) { return .success(first) }
        return .failure(.nowhere(searched: order.map(\.path)))
    }

    /// Files that come before `target` in the search and exist: `gate` run by this
    /// account reads them instead.
    public static func shadowing(_ target: ConfigLocator.Candidate, in locator: ConfigLocator) -> [String] {
        locator.candidates.prefix { $0 != target }.map(\.path).filter { access($0, F_OK) == 0 }
    }

    /// The path can be made: it is absent and its nearest existing folder is writable.
    public static func isCreatable(_ path: String) -> Bool {
        var folder = ConfigLocator.directory(of: path)
        while access(folder, F_OK) != 0 {
            let parent = ConfigLocator.directory(of: folder)
            if parent == folder { return false }
            folder = parent
        }
        return access(folder, W_OK | X_OK) == 0
    }

    /// Makes the missing folders (0755) and the file (0644: it holds no secret), with
    /// `O_EXCL` so that an existing file is never replaced, even one made meanwhile.
    public static func write(_ text: String, to path: String) -> Result<Void, Failure> {
        if let failure = makeFolders(above: path) { return .failure(failure) }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST || code == ELOOP { return .failure(.exists(path: path)) }
            return .failure(.cannotCreate(path: path, SystemError("open", code: code)))
        }
        var failure = Descriptor.writeAll(fd, Array(text.utf8))
        if failure == nil, fsync(fd) != 0 { failure = SystemError("fsync") }
        close(fd)
        if let failure {
            // A partial file would fail validation and block the next try.
            unlink(path)
            return .failure(.cannotCreate(path: path, failure))
        }
        return .success(())
    }

    private static func makeFolders(above path: String) -> Failure? {
        let folder = ConfigLocator.directory(of: path)
        guard access(folder, F_OK) != 0 else { return nil }
        let parent = ConfigLocator.directory(of: folder)
        if parent != folder, let failure = makeFolders(above: folder) { return failure }
        if mkdir(folder, 0o755) != 0 && errno != EEXIST {
            return .cannotCreate(path: path, SystemError("mkdir \(folder)"))
        }
        return nil
    }
}
