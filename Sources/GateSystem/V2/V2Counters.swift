import Synchronization

/// The process's `CounterStore`s, one per counter file: the daemon keeps its reserved
/// block from one opening to the next instead of reserving (and fsyncing) a block per
/// opening. Draws happen under the opening lock; the mutex only guards the table.
public final class V2Counters: Sendable {
    public static let shared = V2Counters()

    private let stores = Mutex<[String: CounterStoreBox]>([:])

    /// The next counter for key `keyID`, drawn under the opening `lock`.
    func next(stateDirectory: String, keyID: UInt8, holding lock: OpeningLock) -> Result<UInt64, CounterStoreError> {
        let path = stateDirectory + "/" + CounterStore.fileName(keyID: keyID)
        let box = stores.withLock { stores -> CounterStoreBox in
            if let box = stores[path] { return box }
            let box = CounterStoreBox(stateDirectory: stateDirectory, keyID: keyID)
            stores[path] = box
            return box
        }
        return box.store.withLock { store in
            Result { () throws(CounterStoreError) in try store.next(holding: lock) }
        }
    }
}

/// One store behind its own lock: a `CounterStore` is not thread-safe by itself.
final class CounterStoreBox: Sendable {
    let store: Mutex<CounterStore>

    init(stateDirectory: String, keyID: UInt8) {
        store = Mutex(CounterStore(stateDirectory: stateDirectory, keyID: keyID))
    }
}
