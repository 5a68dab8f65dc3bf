import GateCore
import GateV2
import Synchronization

/// What a protocol v2 opening waits for an answer to: its frame, and the status query
/// that learns the epoch. Replies that come through the MQTT link (on libmosquitto's
/// thread) are checked here against them; only a genuine reply becomes an input.
final class V2Exchange: Sendable {
    struct Waiting {
        var frame: V2Frame?
        var query: (number: Int, frame: V2Frame)?
    }

    let key: V2Key
    private let waiting = Mutex(Waiting())

    init(key: V2Key) {
        self.key = key
    }

    var frame: V2Frame? { waiting.withLock { $0.frame } }

    func expect(frame: V2Frame) {
        waiting.withLock { $0.frame = frame }
    }

    func expect(query: V2Frame, number: Int) {
        waiting.withLock { $0.query = (number, query) }
    }

    func endQuery() {
        waiting.withLock { $0.query = nil }
    }

    /// The input a payload on `<status_topic>/v2` makes, or nil when it is no genuine reply
    /// to what this opening waits for (ignored: a forgery, another client's, a stale one).
    func input(forPayload payload: [UInt8], at: MonotonicInstant) -> OpeningInput? {
        let now = waiting.withLock { $0 }
        if let frame = now.frame, let reply = key.reply(to: frame, payload: payload) {
            return .signed(reply.kind, epoch: reply.epoch, at: at)
        }
        if let query = now.query, let reply = key.reply(to: query.frame, payload: payload),
            let status = V2DeviceStatus(kind: reply.kind, epoch: reply.epoch)
        {
            return .epoch(query: query.number, .success(status.epoch), at: at)
        }
        return nil
    }
}
