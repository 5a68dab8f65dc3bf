import Plumbing

#if canImport(Glibc)
import Glibc
#endif

public struct FolderIdentity: Sendable, Hashable {
    public let device: UInt64
    public let inode: UInt64
}
