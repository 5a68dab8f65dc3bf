#if canImport(Glibc)
import Glibc
import Plumbing
#endif

/// A fixed-size byte buffer, wiped with explicit_bzero before it is freed.
final class WipedBuffer {
    let base: UnsafeMutablePointer<UInt8>
    let capacity: Int
    var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
        base.initialize(repeating: 0, count: capacity)
    }

    var contents: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    deinit {
        explicit_bzero(base, capacity)
        base.deallocate()
    }
}
