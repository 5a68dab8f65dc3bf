public struct FolderIdentity: Sendable, Hashable {
    public let device: UInt64
    public let inode: UInt64
}
